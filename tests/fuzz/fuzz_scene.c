/* fuzz_scene: libFuzzer target for the scene parser. Any input must give SPHSIM_OK or a clean
 * error with a message; never a crash, leak, or undefined behaviour (built with ASan/UBSan). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "scene.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    scene s;
    sphsim_error e = { 0 };
    /* with and without an override, so the --set path is exercised too */
    static const char *const sets[] = { "time.end=0.5", "fluid.blocks[0].max[0]=0.3" };
    sphsim_status st = scene_load_string(&s, text, "fuzz", NULL, 0, &e);
    if (st == SPHSIM_OK) scene_free(&s);
    else if (e.msg[0] == 0) abort(); /* every error must say something */
    st = scene_load_string(&s, text, "fuzz", sets, 2, &e);
    if (st == SPHSIM_OK) scene_free(&s);
    else if (e.msg[0] == 0) abort();
    free(text);
    return 0;
}
