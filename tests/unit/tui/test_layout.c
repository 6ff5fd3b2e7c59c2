/* The terminal view's geometry (tui/layout.h): tiling, scrolling, eliding. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tui/layout.h"

/* The grid area of an 80x24 terminal: the header, status and command
 * lines take three rows. */
#define W 80
#define H 21

static void test_few_ranks_all_fit(void **state)
{
    (void)state;
    tui_grid_t g = tui_grid_fit(4, W, H);
    assert_int_equal(g.cols, 2);
    assert_int_equal(g.rows, 2);
    assert_int_equal(g.per_page, 4);
    assert_int_equal(g.panel_w, 40);
    assert_int_equal(g.panel_h, 10);
    g = tui_grid_fit(1, W, H);
    assert_int_equal(g.cols * g.rows, 1);
    assert_int_equal(g.panel_w, W);
    /* Every rank shown in the larger terminal: 16 at 160x45. */
    g = tui_grid_fit(16, 160, 45);
    assert_true(g.per_page >= 16);
    assert_true(g.panel_w >= TUI_PANEL_MIN_W && g.panel_h >= TUI_PANEL_MIN_H);
}

static void test_many_ranks_scroll(void **state)
{
    (void)state;
    tui_grid_t g = tui_grid_fit(16, W, H);
    assert_int_equal(g.cols, W / TUI_PANEL_MIN_W);
    assert_int_equal(g.rows, H / TUI_PANEL_MIN_H);
    assert_true(g.per_page < 16);
    /* Focus on screen: no move. Below: the grid moves down by rows, and
     * never past the last row. */
    assert_int_equal(tui_grid_first(&g, 16, 5, 0), 0);
    assert_int_equal(tui_grid_first(&g, 16, 12, 0), 3);
    assert_int_equal(tui_grid_first(&g, 16, 15, 0), 6);
    assert_int_equal(tui_grid_first(&g, 16, 15, 9), 6);
    /* Above: up to the focus's row. */
    assert_int_equal(tui_grid_first(&g, 16, 1, 6), 0);
    /* 64 ranks fit the tiling rules too. */
    g = tui_grid_fit(64, W, H);
    assert_true(g.per_page >= 1 && g.per_page <= 64);
    assert_int_equal(tui_grid_first(&g, 64, 63, 0) + g.per_page >= 64, 1);
}

static void test_cells_cover_the_area(void **state)
{
    (void)state;
    tui_grid_t g = tui_grid_fit(3, 81, 21);
    int area = 0;
    for (int i = 0; i < g.per_page; i++) {
        int y, x, h, w;
        tui_grid_cell(&g, 81, 21, i, &y, &x, &h, &w);
        assert_true(x + w <= 81 && y + h <= 21);
        area += h * w;
    }
    assert_int_equal(area, 81 * 21);
}

static void test_tiny_terminal(void **state)
{
    (void)state;
    tui_grid_t g = tui_grid_fit(8, 10, 3);
    assert_int_equal(g.per_page, 1);
    assert_int_equal(g.panel_w, 10);
    assert_int_equal(g.panel_h, 3);
}

static void test_elide(void **state)
{
    (void)state;
    char out[128];
    assert_string_equal(tui_elide("t = tensor([0, 1])", " (2)", "...", 3, 40, out, sizeof(out)),
                        "t = tensor([0, 1])");
    /* Both ends stay; the length follows. */
    const char *s = "t = tensor([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])";
    tui_elide(s, " (10)", "...", 3, 30, out, sizeof(out));
    assert_int_equal(strlen(out), 30);
    assert_string_equal(out, "t = tensor(..., 7, 8, 9]) (10)");
    /* The one-column mark of a UTF-8 terminal leaves two more columns. */
    tui_elide(s, " (10)", "\xe2\x80\xa6", 1, 30, out, sizeof(out));
    assert_string_equal(out, "t = tensor([\xe2\x80\xa6"
                             "6, 7, 8, 9]) (10)");
    /* No room for both ends: the head. */
    assert_string_equal(tui_elide(s, " (10)", "...", 3, 8, out, sizeof(out)), "t = tens");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_few_ranks_all_fit),
        cmocka_unit_test(test_many_ranks_scroll),
        cmocka_unit_test(test_cells_cover_the_area),
        cmocka_unit_test(test_tiny_terminal),
        cmocka_unit_test(test_elide),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
