// SPDX-License-Identifier: Apache-2.0
// The Py_tss_t of this pybind11's internals.tstate: internals v4 (pybind11 2.10 on Debian 12, and
// 2.13 on Python < 3.12) keeps a Py_tss_t*, v5 (2.13 on 3.12+: Debian 13) an inline Py_tss_t.
#ifndef PYTSTATES_SCENARIO_INTERNALS_KEY_H
#define PYTSTATES_SCENARIO_INTERNALS_KEY_H

#include <pybind11/pybind11.h>

inline Py_tss_t* internalsTstateTss() {
    auto& internals = pybind11::detail::get_internals();
#if PYBIND11_INTERNALS_VERSION > 4
    return &internals.tstate;
#else
    return internals.tstate;
#endif
}

inline unsigned internalsTstateKey() { return internalsTstateTss()->_key; }

#endif
