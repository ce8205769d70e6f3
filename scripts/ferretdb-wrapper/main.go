// ferretdb-wrapper runs FerretDB v1.24 (its embeddable package, SQLite handler) on one
// loopback address for keyplan's tests. scripts/target-ferretdb.sh builds and starts it.
//
// The plain `go install .../cmd/ferretdb` binary panics at start because the module
// lacks its generated build/version/version.txt; the embeddable package does not need it.
//
//	ferretdb-wrapper -listen 127.0.0.1:28017 -dir /absolute/existing/dir [-debug]
//
// SIGINT or SIGTERM stops it cleanly (listener closed, SQLite databases closed).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/FerretDB/FerretDB/ferretdb"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:28017", "TCP address to listen on")
	dir := flag.String("dir", "", "existing directory for the SQLite databases (required)")
	debug := flag.Bool("debug", false, "log at debug level")
	flag.Parse()

	if err := run(*listen, *dir, *debug); err != nil {
		fmt.Fprintf(os.Stderr, "ferretdb-wrapper: %v\n", err)
		os.Exit(1)
	}
}

func run(listen, dir string, debug bool) error {
	if dir == "" {
		return fmt.Errorf("-dir is required")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return fmt.Errorf("-dir %q is not an existing directory", abs)
	}
	// FerretDB passes the directory on inside a SQLite URI without escaping it.
	if strings.ContainsAny(abs, "?#%") {
		return fmt.Errorf("-dir %q: FerretDB cannot use a path containing '?', '#' or '%%'", abs)
	}

	level := slog.LevelInfo
	if debug {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: listen},
		Logger:    logger,
		Handler:   "sqlite",
		SQLiteURL: "file:" + abs + "/",
	})
	if err != nil {
		return err
	}

	logger.Info("ferretdb-wrapper: starting", "listen", listen, "dir", abs)
	if err := f.Run(ctx); err != nil {
		return err
	}
	logger.Info("ferretdb-wrapper: stopped")
	return nil
}
