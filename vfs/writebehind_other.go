//go:build !(linux && (amd64 || arm64 || riscv64 || loong64 || s390x))

package vfs

// WriteBehind would start the write-back of a range of f's dirty pages; it
// is supported on Linux only and does nothing here.
func WriteBehind(f File, off, n int64) {}
