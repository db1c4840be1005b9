/* SPDX-License-Identifier: MIT */
#include "view/view.h"

#include <stdlib.h>
#include <string.h>

static const struct view_type *const views[] = { &calls_view, &folded_view, &chrome_view, &drcov_view,
                                                 &lcov_view };

const struct view_type *view_find(const char *name)
{
    for (size_t i = 0; i < sizeof(views) / sizeof(views[0]); i++)
        if (!strcmp(views[i]->name, name))
            return views[i];
    return NULL;
}

const char *view_names(void)
{
    /* From the table, so that a new view is named where it is registered. */
    static char names[128];
    if (!names[0]) {
        size_t n = sizeof(views) / sizeof(views[0]), len = 0;
        for (size_t i = 0; i < n && len < sizeof(names); i++)
            len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s", i == 0 ? "" : i + 1 < n ? ", " : " or ",
                                    views[i]->name);
    }
    return names;
}

void view_put_name(FILE *out, const struct stack_frame *f, const char *bad, bool json)
{
    if (!f->name) {
        if (f->func)
            fprintf(out, "0x%llx", (unsigned long long)f->func);
        else
            fputs("??", out);
        return;
    }
    size_t n = 0;
    for (const char *c = f->name; *c && n < VIEW_NAME_MAX; c++, n++) {
        unsigned char ch = (unsigned char)*c;
        if (ch < 0x20 || ch > 0x7e || (bad && strchr(bad, ch)))
            ch = '?';
        else if (json && (ch == '"' || ch == '\\'))
            putc('\\', out);
        putc(ch, out);
    }
}

void *view_stacked_new(size_t size, FILE *out, const struct vbts_symtab *symtab, const struct stack_ops *ops,
                       char *err, size_t errlen)
{
    struct view_stacked *v = calloc(1, size);
    if (!v || !(v->stack = stack_new(symtab, ops, v))) {
        free(v);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    v->out = out;
    return v;
}

int view_stacked_event(void *v, const struct vbts_event *ev)
{
    return stack_event(((struct view_stacked *)v)->stack, ev);
}

void view_stacked_free(void *p)
{
    struct view_stacked *v = p;
    if (v)
        stack_free(v->stack);
    free(v);
}
