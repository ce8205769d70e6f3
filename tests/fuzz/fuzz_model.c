/*
 * fuzz_model.c — libFuzzer target for the model parser and validator.
 *
 * Any input must end in a loaded model or a filled kp_error with a message; never a
 * crash, a leak or undefined behaviour. A loaded model is also rendered (JSON and
 * summary) so the renderers see every shape the parser accepts.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    kp_model *model = NULL;
    kp_error err;
    if (kp_model_parse("fuzz.json", (const char *)data, size, NULL, &model, &err) == 0) {
        cJSON *json = kp_model_to_json(model);
        char *text = cJSON_PrintUnformatted(json);
        cJSON_free(text);
        cJSON_Delete(json);
        FILE *sink = fopen("/dev/null", "w");
        if (sink) {
            kp_model_print_summary(sink, model);
            fclose(sink);
        }
        kp_model_free(model);
    } else if (err.message[0] == '\0') {
        __builtin_trap(); /* an error must always say something */
    }
    return 0;
}
