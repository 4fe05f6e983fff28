package kptengine

// kpt's function runtime links wasmtime's static library, whose objects
// carry no .note.GNU-stack section: without this flag every binary and
// test that uses kptengine makes the linker warn that this "implies an
// executable stack". The stack is not executable with it, and the warning
// goes. (Files importing "C" are left out when cgo is off; then nothing
// links wasmtime's library and there is nothing to say.)

// #cgo LDFLAGS: -Wl,-z,noexecstack
import "C"
