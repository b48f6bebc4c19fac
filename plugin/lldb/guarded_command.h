// SPDX-License-Identifier: Apache-2.0
// An lldb command whose body may throw: lldb runs plugin commands with no handler of its own, so
// an exception would end lldb. Here it becomes the command's error, "NAME: what", and status failed.
#pragma once

#include <lldb/API/LLDB.h>

#include <exception>
#include <string>
#include <utility>

namespace pytstates {

class GuardedCommand : public lldb::SBCommandPluginInterface {
public:
    explicit GuardedCommand(std::string name) : name_(std::move(name)) {}

    bool DoExecute(lldb::SBDebugger debugger, char** arguments, lldb::SBCommandReturnObject& result) final {
        try {
            return execute(debugger, arguments, result);
        } catch (const std::exception& e) {
            return fail(result, e.what());
        } catch (...) {
            return fail(result, "internal error");
        }
    }

protected:
    virtual bool execute(lldb::SBDebugger debugger, char** arguments, lldb::SBCommandReturnObject& result) = 0;

    // Always false, so that a body can `return fail(...)`.
    bool fail(lldb::SBCommandReturnObject& result, const std::string& why) const {
        result.SetError((name_ + ": " + why).c_str());
        result.SetStatus(lldb::eReturnStatusFailed);
        return false;
    }

private:
    std::string name_;
};

}  // namespace pytstates
