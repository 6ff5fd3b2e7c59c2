/* The view's command line (tui/cmdline.h): keys in, the line out; no
 * terminal needed, as nothing is drawn. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tui/cmdline.h"

static void type(tui_cmdline_t *cl, char c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        assert_int_equal(tui_cmdline_key(cl, (unsigned char)c, NULL), TUI_CMDLINE_EDITED);
}

/* A line as long as the shell takes is kept whole; a key past that is
 * refused where the person sees it, not dropped unseen. */
static void test_long_line(void **state)
{
    (void)state;
    tui_cmdline_t *cl = calloc(1, sizeof(*cl));
    assert_non_null(cl);
    tui_cmdline_open(cl);
    type(cl, 'x', 600);
    assert_int_equal(cl->len, 600);
    assert_string_equal(cl->hint, "");
    type(cl, 'x', LAB_LANG_MAX_LINE - 600);
    assert_int_equal(cl->len, LAB_LANG_MAX_LINE);
    type(cl, 'y', 1);
    assert_int_equal(cl->len, LAB_LANG_MAX_LINE);
    assert_null(strchr(cl->buf, 'y'));
    assert_non_null(strstr(cl->hint, "at its longest"));
    assert_int_equal(tui_cmdline_key(cl, '\n', NULL), TUI_CMDLINE_SUBMIT);
    assert_int_equal(strlen(cl->buf), LAB_LANG_MAX_LINE);
    tui_cmdline_fini(cl);
    free(cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_long_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
