/* See cmdline.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curses.h>

#include "lab/lang/lang.h"
#include "tui/cmdline.h"
#include "tui/screen.h"

#define KEY_ESC 27

void tui_cmdline_open(tui_cmdline_t *cl)
{
    cl->active = true;
    cl->len = cl->pos = 0;
    cl->buf[0] = '\0';
    cl->hist_at = cl->n_hist;
    cl->hint[0] = '\0';
}

static void set_line(tui_cmdline_t *cl, const char *s)
{
    snprintf(cl->buf, sizeof(cl->buf), "%s", s);
    cl->len = cl->pos = strlen(cl->buf);
}

/* Inserts s at the cursor; false when the line would be longer than the
 * shell takes. */
static bool insert(tui_cmdline_t *cl, const char *s, size_t n)
{
    if (cl->len + n >= sizeof(cl->buf))
        return false;
    memmove(cl->buf + cl->pos + n, cl->buf + cl->pos, cl->len - cl->pos + 1);
    memcpy(cl->buf + cl->pos, s, n);
    cl->pos += n;
    cl->len += n;
    return true;
}

/* Tab: one match replaces the word; several extend it by what they share
 * and are listed in the hint. */
static void complete(tui_cmdline_t *cl, lab_shell_t *sh)
{
    size_t n_names = 0, n = 0;
    const char *const *names = sh != NULL ? lab_shell_names(sh, &n_names) : NULL;
    char **matches = NULL;
    int start = 0;
    char saved = cl->buf[cl->pos];
    cl->buf[cl->pos] = '\0';
    dl_status_t st = lab_complete(cl->buf, (int)cl->pos, names, n_names, &matches, &n, &start);
    cl->buf[cl->pos] = saved;
    if (st != DL_OK || n == 0)
        return;
    size_t common = strlen(matches[0]);
    for (size_t i = 1; i < n; i++) {
        size_t k = 0;
        while (k < common && matches[i][k] == matches[0][k])
            k++;
        common = k;
    }
    size_t have = cl->pos - (size_t)start;
    if (common > have)
        (void)insert(cl, matches[0] + have, common - have);
    if (n == 1 && matches[0][common - 1] != '=')
        (void)insert(cl, " ", 1);
    cl->hint[0] = '\0';
    for (size_t i = 0; n > 1 && i < n; i++) {
        size_t used = strlen(cl->hint);
        snprintf(cl->hint + used, sizeof(cl->hint) - used, "%s%s", i ? "  " : "", matches[i]);
    }
    lab_complete_free(matches, n);
}

tui_cmdline_result_t tui_cmdline_key(tui_cmdline_t *cl, int key, lab_shell_t *sh)
{
    switch (key) {
    case KEY_ESC:
        cl->active = false;
        return TUI_CMDLINE_CANCEL;
    case '\r':
    case '\n':
    case KEY_ENTER:
        cl->active = false;
        cl->hint[0] = '\0';
        return TUI_CMDLINE_SUBMIT;
    case KEY_BACKSPACE:
    case 127:
    case 8:
        if (cl->len == 0) {
            cl->active = false;
            return TUI_CMDLINE_CANCEL;
        }
        if (cl->pos > 0) {
            memmove(cl->buf + cl->pos - 1, cl->buf + cl->pos, cl->len - cl->pos + 1);
            cl->pos--;
            cl->len--;
        }
        break;
    case KEY_DC:
        if (cl->pos < cl->len) {
            memmove(cl->buf + cl->pos, cl->buf + cl->pos + 1, cl->len - cl->pos);
            cl->len--;
        }
        break;
    case KEY_LEFT:
        cl->pos -= cl->pos > 0;
        break;
    case KEY_RIGHT:
        cl->pos += cl->pos < cl->len;
        break;
    case KEY_HOME:
    case 1: /* Ctrl-A */
        cl->pos = 0;
        break;
    case KEY_END:
    case 5: /* Ctrl-E */
        cl->pos = cl->len;
        break;
    case 21: /* Ctrl-U */
        set_line(cl, "");
        break;
    case KEY_UP:
        if (cl->hist_at > 0)
            set_line(cl, cl->hist[--cl->hist_at]);
        break;
    case KEY_DOWN:
        if (cl->hist_at < cl->n_hist)
            cl->hist_at++;
        set_line(cl, cl->hist_at < cl->n_hist ? cl->hist[cl->hist_at] : "");
        break;
    case '\t':
        complete(cl, sh);
        return TUI_CMDLINE_EDITED;
    default:
        if (key >= ' ' && key < 256) {
            char c = (char)key;
            if (!insert(cl, &c, 1)) {
                /* Said, not dropped unseen: the shell would refuse the line. */
                snprintf(cl->hint, sizeof(cl->hint), "the line is at its longest (%u bytes)",
                         LAB_LANG_MAX_LINE);
                return TUI_CMDLINE_EDITED;
            }
        }
        break;
    }
    cl->hint[0] = '\0';
    return TUI_CMDLINE_EDITED;
}

void tui_cmdline_remember(tui_cmdline_t *cl, const char *line)
{
    if (line[0] == '\0' || (cl->n_hist > 0 && strcmp(cl->hist[cl->n_hist - 1], line) == 0))
        return;
    char *copy = strdup(line);
    if (copy == NULL)
        return;
    if (cl->n_hist == TUI_HISTORY_MAX) {
        free(cl->hist[0]);
        memmove(cl->hist, cl->hist + 1, sizeof(cl->hist[0]) * (TUI_HISTORY_MAX - 1));
        cl->n_hist--;
    }
    cl->hist[cl->n_hist++] = copy;
}

void tui_cmdline_draw(const tui_cmdline_t *cl, int y, int w)
{
    tui_blank(y, 0, w);
    /* A line longer than the screen scrolls so the cursor stays in view. */
    int room = w - 2, from = (int)cl->pos > room ? (int)cl->pos - room : 0;
    tui_text(y, 0, 1, TUI_ROLE_TITLE, ":");
    tui_text(y, 1, room, TUI_ROLE_NORMAL, cl->buf + from);
    move(y, 1 + (int)cl->pos - from);
}

void tui_cmdline_fini(tui_cmdline_t *cl)
{
    for (size_t i = 0; i < cl->n_hist; i++)
        free(cl->hist[i]);
    cl->n_hist = 0;
}
