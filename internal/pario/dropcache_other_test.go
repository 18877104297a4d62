//go:build !linux

package pario_test

import (
	"os"
	"testing"
)

func dropCache(b *testing.B, f *os.File) { b.Skip("dropping a file from the page cache needs Linux") }
