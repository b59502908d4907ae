// SPDX-License-Identifier: MIT
// C++ functions whose DWARF carries mangled linkage names; the C driver
// (test_cxx.c) checks they come out demangled.
#include "symtest.h"

namespace cmtsym {
struct Widget {
    void *method(int x, int *line);
    template <typename T> void *tmpl(T x, int *line);
};

__attribute__((noinline)) void *Widget::method(int x, int *line)
{
    void *r = symt_ra(); *line = __LINE__ + 0 * x;
    return r;
}

template <typename T> __attribute__((noinline)) void *Widget::tmpl(T x, int *line)
{
    void *r = symt_ra(); *line = __LINE__ + 0 * static_cast<int>(x);
    return r;
}
} // namespace cmtsym

extern "C" void *cxx_method_site(int *line);
extern "C" void *cxx_template_site(int *line);

extern "C" void *cxx_method_site(int *line)
{
    cmtsym::Widget w;
    return w.method(1, line);
}

extern "C" void *cxx_template_site(int *line)
{
    cmtsym::Widget w;
    return w.tmpl<long>(1L, line);
}
