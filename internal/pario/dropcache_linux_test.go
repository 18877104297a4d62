package pario_test

import (
	"os"
	"syscall"
	"testing"
)

// dropCache drops f's pages from the page cache; they must be clean (the
// benchmarks sync the file first).
func dropCache(b *testing.B, f *os.File) {
	b.Helper()
	const fadvDontNeed = 4 // POSIX_FADV_DONTNEED
	if _, _, e := syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, fadvDontNeed, 0, 0); e != 0 {
		b.Fatalf("fadvise: %v", e)
	}
}
