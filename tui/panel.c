/* A rank's panel: its frame titled with the rank, host and pid; its life
 * (idle, busy and where, paused before step k, dead and why); then every
 * tensor it has shown, as torch prints it, a line too long cut in the
 * middle with the tensor's length after it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curses.h>

#include "tui/internal.h"
#include "tui/layout.h"
#include "tui/screen.h"

static tui_role_t life_role(lab_life_t life)
{
    switch (life) {
    case LAB_LIFE_IDLE:
        return TUI_ROLE_IDLE;
    case LAB_LIFE_BUSY:
    case LAB_LIFE_STARTING:
        return TUI_ROLE_BUSY;
    case LAB_LIFE_PAUSED:
        return TUI_ROLE_PAUSED;
    case LAB_LIFE_UNRESPONSIVE:
    case LAB_LIFE_DEAD:
        return TUI_ROLE_DEAD;
    }
    return TUI_ROLE_NORMAL;
}

static void life_text(const lab_model_t *m, int r, char *buf, size_t cap)
{
    const lab_rank_model_t *rm = &m->sess.ranks[r];
    const lab_stepper_t *st = &m->stepper;
    switch (lab_model_life(m, r)) {
    case LAB_LIFE_STARTING:
        snprintf(buf, cap, "starting");
        break;
    case LAB_LIFE_IDLE:
        snprintf(buf, cap, "idle");
        break;
    case LAB_LIFE_BUSY:
        snprintf(buf, cap, "busy%s%s", rm->where[0] ? ": " : "", rm->where);
        break;
    case LAB_LIFE_PAUSED:
        snprintf(buf, cap, "paused before step %d/%d", st->cur, st->steps);
        break;
    case LAB_LIFE_UNRESPONSIVE:
        snprintf(buf, cap, "not responding: %s", m->life[r].cause);
        break;
    case LAB_LIFE_DEAD:
        snprintf(buf, cap, "dead: %s", m->life[r].cause[0] ? m->life[r].cause : "exited");
        break;
    }
}

static int64_t numel(const lab_snap_t *sn)
{
    int64_t n = 1;
    for (int d = 0; d < sn->ndim; d++)
        n *= sn->shape[d];
    return n;
}

/* Draws one snapshot from row *y on, never below y_end; returns false when
 * it did not fit. */
/* The rows draw_snap takes for sn: its print's lines. */
static int snap_rows(const lab_snap_t *sn)
{
    char *text = lab_snap_text(sn);
    int rows = 1;
    for (const char *p = text; p != NULL && *p != '\0'; p++)
        rows += *p == '\n';
    free(text);
    return rows;
}

static bool draw_snap(const lab_snap_t *sn, int *y, int y_end, int x, int w)
{
    char prefix[48];
    if (sn->of > 0)
        snprintf(prefix, sizeof(prefix), "%s[%d] = ", sn->name, sn->index);
    else
        snprintf(prefix, sizeof(prefix), "%s = ", sn->name);
    char *text = lab_snap_text(sn);
    if (text == NULL)
        return true;
    char note[32], line[1024], fitted[1024];
    snprintf(note, sizeof(note), " (%lld)", (long long)numel(sn));
    const tui_glyphs_t *g = tui_glyphs();
    bool first = true, fit = true, noted = false;
    /* A tensor of two or more dimensions prints on several lines, each
     * indented under the first as torch aligns them. */
    for (char *p = text; *p != '\0' || first;) {
        if (*y >= y_end) {
            fit = false;
            break;
        }
        char *nl = strchr(p, '\n');
        size_t n = nl != NULL ? (size_t)(nl - p) : strlen(p);
        snprintf(line, sizeof(line), "%*s%.*s", first ? 0 : (int)strlen(prefix), "", (int)n, p);
        char *body = line;
        if (first) {
            snprintf(fitted, sizeof(fitted), "%s%s", prefix, line);
            body = fitted;
        }
        /* The length goes after the first line cut, not after every one. */
        char cut[1024];
        tui_text(
            (*y)++, x, w, TUI_ROLE_NORMAL,
            tui_elide(body, noted ? "" : note, g->ellipsis, g->ellipsis_w, w, cut, sizeof(cut)));
        noted = noted || (int)strlen(body) > w;
        first = false;
        if (nl == NULL)
            break;
        p = nl + 1;
    }
    free(text);
    return fit;
}

/* ---- the step's buffer ---- */

/* A piece of a buffer's print, which lines break after: an element and
 * the punctuation after it (", ", "])"), or the text before the first
 * element ("tensor(["). elem is the element's index in the print, -1 for
 * text that is none. */
typedef struct {
    const char *tok, *trail;
    int tok_n, trail_n;
    int elem;
} piece_t;

/* Cuts text (a 1-D print, torch's or the symbolic one) into pieces, the
 * elements being the runs between the brackets that are not blanks,
 * commas or "...". Returns how many; at most cap. */
static int cut_pieces(const char *text, piece_t *pc, int cap)
{
    const char *open = strchr(text, '['), *close = strrchr(text, ']');
    int n = 0, elem = 0;
    const char *p = text;
    pc[n++] = (piece_t){text, text, 0, 0, -1};
    while (*p != '\0' && n < cap) {
        if (open == NULL || p <= open || p >= close || strchr(" ,[]", *p) != NULL) {
            pc[n - 1].trail_n++;
            p++;
            continue;
        }
        int len = (int)strcspn(p, " ,[]");
        bool dots = len == 3 && strncmp(p, "...", 3) == 0;
        pc[n++] = (piece_t){p, p + len, len, 0, dots ? -1 : elem};
        if (!dots)
            elem++;
        p += len;
    }
    return n;
}

/* Writes n bytes of s at the cursor in attr; returns the columns. */
static int put(const char *s, int n, int attr)
{
    attrset(attr);
    addnstr(s, n);
    attrset(A_NORMAL);
    return n;
}

/* Torch breaks a long print over lines; the panel wraps it at its own
 * width instead: each line break and the indent after it become a blank. */
static void unwrap(char *text)
{
    char *o = text;
    for (const char *p = text; *p != '\0'; p++) {
        if (*p == '\n') {
            *o++ = ' ';
            while (p[1] == ' ')
                p++;
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
}

/* Draws text (a print of world rank r's buffer in rec, or of its scratch
 * buffer when tmp) after prefix from row *y on, wrapped at its elements:
 * the changed ones lit, the buffer's in its chunk's colour. */
static void draw_wrapped(tui_t *t, const lab_step_rec_t *rec, int r, bool tmp, char *text,
                         const char *prefix, int *y, int y_end, int x, int w)
{
    const dl_tensor_t *b = tmp ? rec->tmps[r] : rec->bufs[r];
    const bool *changed = tmp ? rec->tmp_changed[r] : rec->changed[r];
    unwrap(text);
    int cap = (int)b->numel + 8;
    piece_t *pc = malloc(sizeof(*pc) * (size_t)cap);
    if (pc == NULL)
        return;
    int n = cut_pieces(text, pc, cap);
    tui_blank(*y, x, w);
    move(*y, x);
    int col = put(prefix, (int)strlen(prefix), 0);
    int indent = col + pc[0].trail_n;
    if (indent > w / 2)
        indent = 0;
    for (int i = 0; i < n; i++) {
        /* The blanks after a piece do not count: a line may end there. */
        int trail = pc[i].trail_n;
        while (trail > 0 && pc[i].trail[trail - 1] == ' ')
            trail--;
        if (col + pc[i].tok_n + trail > w && col > indent) {
            if (++*y >= y_end)
                break;
            tui_blank(*y, x, w);
            col = indent;
            move(*y, x + col);
        }
        int e = pc[i].elem, attr = 0;
        if (e >= 0) {
            if (!tmp)
                attr = tui_chunk_attr(lab_stepview_chunk(&t->sv, rec, r, (size_t)e));
            if (changed != NULL && (size_t)e < b->numel && changed[e])
                attr |= tui_attr(TUI_ROLE_CHANGED);
        }
        int room = w - col;
        col += put(pc[i].tok, pc[i].tok_n < room ? pc[i].tok_n : room, attr);
        room = w - col;
        if (room > 0)
            col += put(pc[i].trail, pc[i].trail_n < room ? pc[i].trail_n : room, 0);
    }
    (*y)++;
    free(pc);
}

/* Draws world rank r's buffer of the shown step from row *y on, wrapped at
 * its elements: the changed ones lit, each in its chunk's colour, or each
 * as the sum of the ranks' inputs when symbolic. */
/* Rank r's shown buffer (or its scratch buffer) as sums of the ranks'
 * inputs, "[a0+b0, b1, ...]", the elements a print shows; malloc'd. */
static char *symbolic_text(tui_t *t, const lab_step_rec_t *rec, int r, bool tmp)
{
    const dl_tensor_t *b = tmp ? rec->tmps[r] : rec->bufs[r];
    int64_t len = tmp ? rec->tmp_lens[r] : rec->lens[r];
    size_t cap = 64 + b->numel * 48, at = 0;
    char *text = malloc(cap);
    if (text == NULL)
        return NULL;
    at += (size_t)snprintf(text + at, cap - at, "[");
    for (size_t i = 0; i < b->numel && at < cap; i++) {
        char sym[40];
        if (!lab_stepview_symbol_in(&t->sv, rec, r, tmp, i, sym, sizeof(sym)))
            snprintf(sym, sizeof(sym), "?");
        at += (size_t)snprintf(text + at, cap - at, "%s%s", i > 0 ? ", " : "", sym);
        if ((int64_t)b->numel < len && i + 1 == b->numel / 2 && at < cap)
            at += (size_t)snprintf(text + at, cap - at, ", ...");
    }
    if (at < cap)
        snprintf(text + at, cap - at, "]");
    return text;
}

static void draw_step_buf(tui_t *t, const lab_step_rec_t *rec, int r, int *y, int y_end, int x,
                          int w)
{
    const dl_tensor_t *b = rec->bufs[r];
    if (*y >= y_end)
        return;
    if (b == NULL) {
        tui_text((*y)++, x, w, TUI_ROLE_DIM,
                 lab_stepper_in_group(&t->m->stepper, r) || rec->ngroup == rec->np
                     ? "(no state)"
                     : "(not in the group)");
        return;
    }
    char *text = t->symbolic && t->sv.s != NULL ? symbolic_text(t, rec, r, false)
                                                : lab_step_buf_text(rec, r);
    if (text == NULL)
        return;
    char prefix[16];
    snprintf(prefix, sizeof(prefix), "%s = ", lab_stepview_buf_name(&t->sv));
    draw_wrapped(t, rec, r, false, text, prefix, y, y_end, x, w);
    free(text);
    /* The algorithm's scratch buffer, under it, while it holds data. */
    if (*y >= y_end || (text = lab_step_tmp_text(rec, r)) == NULL)
        return;
    if (t->symbolic && t->sv.s != NULL) {
        free(text);
        text = symbolic_text(t, rec, r, true);
    }
    if (text != NULL) {
        draw_wrapped(t, rec, r, true, text, "tmp = ", y, y_end, x, w);
        free(text);
    }
}

/* ---- the message list ---- */

/* The messages the list shows for rec: its own, or for the state before
 * step 1 the first step's, from the schedule. */
static const dl_step_desc_t *shown_msgs(tui_t *t, const lab_step_rec_t *rec, bool *next_p)
{
    *next_p = rec->k == 0;
    if (rec->k > 0)
        return &rec->desc;
    return lab_stepview_desc(&t->sv, 1);
}

/* Whether the list shows message i of d: every one, or with a panel
 * zoomed the ones its rank sends or receives. */
static bool msg_listed(const tui_t *t, const dl_step_desc_t *d, size_t i)
{
    return !t->zoom || d->msgs[i].src_rank == t->focus || d->msgs[i].dst_rank == t->focus;
}

static size_t n_listed(const tui_t *t, const dl_step_desc_t *d)
{
    size_t n = 0;
    for (size_t i = 0; d != NULL && i < d->n_msgs; i++)
        n += msg_listed(t, d, i);
    return n;
}

int tui__msgs_rows(tui_t *t, int avail)
{
    const lab_step_rec_t *rec = tui__step_rec(t);
    if (rec == NULL)
        return 0;
    bool next;
    const dl_step_desc_t *d = shown_msgs(t, rec, &next);
    size_t listed = n_listed(t, d);
    int want = 2 + (listed > 0 ? (int)listed : 1);
    /* The panels keep at least half the screen. */
    if (want > avail / 2)
        want = avail / 2;
    return want < 3 ? 0 : want;
}

void tui__draw_msgs(tui_t *t, int y, int h, int w)
{
    const lab_step_rec_t *rec = tui__step_rec(t);
    if (rec == NULL || h < 3)
        return;
    bool next;
    const dl_step_desc_t *d = shown_msgs(t, rec, &next);
    char title[160];
    if (next)
        snprintf(title, sizeof(title), " before step 1/%d: step 1 sends ", rec->n);
    else
        snprintf(title, sizeof(title), " step %d/%d  %s%s ", rec->k, rec->n,
                 rec->desc.phase != NULL ? rec->desc.phase : "",
                 rec->ran_from > 0 ? "  (the end of `continue`; b shows each step)" : "");
    tui_frame(y, 0, h, w, TUI_ROLE_BORDER, NULL);
    tui_text(y, 1, w - 2, TUI_ROLE_MSGS, title);
    int row = y + 1, end = y + h - 1;
    size_t left = n_listed(t, d);
    if (d == NULL || left == 0) {
        tui_text(row, 2, w - 4, TUI_ROLE_DIM,
                 d == NULL ? "(messages unknown)"
                 : t->zoom ? "(none to or from this rank)"
                           : "(no messages)");
        return;
    }
    /* The schedule's columns, so that each line reads as explain's. */
    for (size_t i = 0; i < d->n_msgs && row < end; i++) {
        char line[256];
        if (!msg_listed(t, d, i))
            continue;
        if (row == end - 1 && left > 1) {
            snprintf(line, sizeof(line),
                     t->zoom ? "(%zu more)" : "(%zu more; enter on a panel lists its rank's only)",
                     left);
            tui_text(row++, 2, w - 4, TUI_ROLE_DIM, line);
            break;
        }
        left--;
        lab_stepview_msg_line(&t->sv, d, i, line, sizeof(line));
        tui_text(row++, 2, w - 4, TUI_ROLE_NORMAL, line);
    }
}

/* ---- the shown step's messages on the panels' titles ---- */

/* One mark on a panel's title: "→r1 c0" (a message the rank sends to
 * rank 1, chunk 0) or "←r3 c3" (one it receives from rank 3), in its
 * chunk's colour. */
typedef struct {
    char text[40];
    int chunk;
} mark_t;

#define MAX_MARKS 8

static int mark_cols(const mark_t *mk)
{
    const tui_glyphs_t *g = tui_glyphs();
    return (int)strlen(mk->text) - (int)strlen(g->to) + g->arrow_w;
}

/* Rank r's marks for the messages of the shown step (those the list
 * shows), at a level of detail: 0 one per message with its chunk, 1 the
 * peers ("→r1,r2", "←r3"), 2 the counts ("→2", "←2"). Returns how many
 * (-1 when level 0 would take too many); *cols_p: their columns, two
 * blanks apart. */
static int step_marks(tui_t *t, int r, int level, mark_t *mk, int *cols_p)
{
    const lab_step_rec_t *rec = tui__step_rec(t);
    *cols_p = 0;
    if (rec == NULL)
        return 0;
    bool next;
    const dl_step_desc_t *d = shown_msgs(t, rec, &next);
    if (d == NULL)
        return 0;
    const tui_glyphs_t *g = tui_glyphs();
    int n = 0;
    for (int dir = 0; dir < 2; dir++) { /* sends, then receives */
        const char *arrow = dir == 0 ? g->to : g->from;
        int count = 0, at = 0;
        char peers[40] = "";
        for (size_t i = 0; i < d->n_msgs; i++) {
            const dl_msg_desc_t *msg = &d->msgs[i];
            int peer = dir == 0 ? msg->dst_rank : msg->src_rank;
            if (dl_msg_is_local(msg->kind) || (dir == 0 ? msg->src_rank : msg->dst_rank) != r)
                continue;
            count++;
            if (level == 0) {
                if (n == MAX_MARKS)
                    return -1;
                mark_t *k = &mk[n++];
                k->chunk = msg->chunk;
                if (msg->chunk >= 0)
                    snprintf(k->text, sizeof(k->text), "%sr%d c%d", arrow, peer, msg->chunk);
                else
                    snprintf(k->text, sizeof(k->text), "%sr%d", arrow, peer);
            } else if (at < (int)sizeof(peers)) {
                bool seen = false; /* a peer named once */
                for (size_t j = 0; j < i && !seen; j++)
                    seen = !dl_msg_is_local(d->msgs[j].kind) &&
                           (dir == 0 ? d->msgs[j].src_rank == r && d->msgs[j].dst_rank == peer
                                     : d->msgs[j].dst_rank == r && d->msgs[j].src_rank == peer);
                if (!seen)
                    at += snprintf(peers + at, sizeof(peers) - (size_t)at, "%sr%d",
                                   at > 0 ? "," : "", peer);
            }
        }
        if (level > 0 && count > 0) {
            mark_t *k = &mk[n++];
            k->chunk = -1;
            if (level == 1)
                snprintf(k->text, sizeof(k->text), "%s%s", arrow, peers);
            else
                snprintf(k->text, sizeof(k->text), "%s%d", arrow, count);
        }
    }
    for (int i = 0; i < n; i++)
        *cols_p += (i > 0 ? 2 : 0) + mark_cols(&mk[i]);
    return n;
}

/* Draws n marks of cols columns at the right end of the top border of
 * the panel at (y, x), w wide. */
static void draw_marks(const mark_t *mk, int n, int cols, int y, int x, int w)
{
    move(y, x + w - 1 - (cols + 2));
    addch(' ');
    for (int i = 0; i < n; i++) {
        if (i > 0)
            addstr("  ");
        put(mk[i].text, (int)strlen(mk[i].text), tui_chunk_attr(mk[i].chunk) | A_BOLD);
    }
    addch(' ');
}

/* ---- the panel ---- */

void tui__draw_panel(tui_t *t, int r, int y, int x, int h, int w, bool focused)
{
    const lab_model_t *m = t->m;
    const lab_rank_model_t *rm = &m->sess.ranks[r];
    /* The title, shorter when the step's marks need the room: without the
     * host, then the rank alone. */
    char titles[3][128];
    int n_titles = 1;
    snprintf(titles[0], sizeof(titles[0]), "rank %d", r);
    if (rm->pid > 0) {
        snprintf(titles[2], sizeof(titles[2]), "%s", titles[0]);
        snprintf(titles[0], sizeof(titles[0]), "rank %d  %s  pid %d", r, m->life[r].host, rm->pid);
        snprintf(titles[1], sizeof(titles[1]), "rank %d  pid %d", r, rm->pid);
        n_titles = 3;
    }
    mark_t mk[MAX_MARKS];
    int n_marks = 0, cols = 0, title = 0;
    for (int level = 0; level < 3; level++) {
        n_marks = step_marks(t, r, level, mk, &cols);
        if (n_marks < 0) /* too many to name each */
            continue;
        for (title = 0; n_marks > 0 && title < n_titles; title++)
            if (2 + (int)strlen(titles[title]) + 2 + cols + 3 <= w)
                break; /* corner, blank, title, blank, border, blank, marks, blank, corner */
        if (n_marks == 0 || title < n_titles)
            break;
    }
    if (n_marks <= 0 || title == n_titles) { /* nothing to mark, or no room at all */
        n_marks = 0;
        title = 0;
    }
    tui_frame(y, x, h, w, focused ? TUI_ROLE_FOCUS : TUI_ROLE_BORDER, titles[title]);
    if (n_marks > 0)
        draw_marks(mk, n_marks, cols, y, x, w);
    int ix = x + 1, iw = w - 2, iy = y + 1, y_end = y + h - 1;
    if (iw <= 0 || iy >= y_end)
        return;
    char life[300];
    life_text(m, r, life, sizeof(life));
    tui_text(iy++, ix, iw, life_role(lab_model_life(m, r)), life);
    const lab_step_rec_t *rec = tui__step_rec(t);
    if (rec != NULL && r < rec->np)
        draw_step_buf(t, rec, r, &iy, y_end, ix, iw);
    for (int i = 0; i < rm->n_shown; i++) {
        /* The last row is kept for "(N more)" unless the last tensor fits
         * whole, so that the note never covers a line it cuts. */
        int lim =
            i + 1 == rm->n_shown && iy + snap_rows(&rm->shown[i]) <= y_end ? y_end : y_end - 1;
        if (!draw_snap(&rm->shown[i], &iy, lim, ix, iw)) {
            /* Say what does not fit rather than cutting silently. */
            char more[64];
            snprintf(more, sizeof(more), t->zoom ? "(%d more than fit)" : "(%d more; enter zooms)",
                     rm->n_shown - i);
            /* On the last row inside the frame, never on its border. */
            tui_blank(y_end - 1, ix, iw);
            tui_text(y_end - 1, ix, iw, TUI_ROLE_DIM, more);
            break;
        }
    }
}
