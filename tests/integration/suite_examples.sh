# suite_examples.sh — sourced by dynamodb.sh, mongodb.sh, cassandra.sh and
# scripts/verify-seeds.sh: the examples and fixtures each database's suite generates, seeds
# and verifies, as NAME:SCALE (why each is there, and why at that scale, is said where each
# suite uses its list). One list per database, so the full seed loop runs what CI runs.
# shellcheck disable=SC2034 # used by the scripts that source this file
dynamodb_examples=(saas-control-plane:0.004 ecommerce-single-table:0.0002 leaderboard:0.00001 order-response:0.00002
                   auction-mixes:0.0002 every-feature:0.02 bucketed-follows:1 hotel-reservations:0.0005
                   product-catalog:0.0008 forum:0.001 join-pages:1 bucketed-tags:1)
# shellcheck disable=SC2034
mongodb_examples=(saas-control-plane:0.002 ecommerce-single-table:0.0001 leaderboard:0.000005 order-response:0.00001
                  auction-mixes:0.0001 every-feature:0.02 hotel-reservations:0.0005 product-catalog:0.0004 forum:0.0002
                  join-pages:1 bucketed-tags:1)
# shellcheck disable=SC2034
cassandra_examples=(saas-control-plane:0.004 ecommerce-single-table:0.0002 leaderboard:0.00001 order-response:0.00002
                    auction-mixes:0.0002 every-feature:0.02 bucketed-follows:1 hotel-reservations:0.0005
                    product-catalog:0.0008 forum:0.001 join-pages:1 bucketed-tags:1 range-buckets:1)
