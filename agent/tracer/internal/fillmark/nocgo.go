//go:build !cgo

package fillmark

// Available says the functions exist: not without cgo.
const Available = false

// Begin is unavailable without cgo.
func Begin(key uint64) { panic("fillmark: built without cgo") }

// End is unavailable without cgo.
func End(stored bool) { panic("fillmark: built without cgo") }

// Addresses is unavailable without cgo.
func Addresses() (begin, end uintptr) { panic("fillmark: built without cgo") }
