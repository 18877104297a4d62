package errorfs_test

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/caskade/caskade/vfs"
	"github.com/caskade/caskade/vfs/errorfs"
)

func ExampleFS_SetSpace() {
	efs := errorfs.New(vfs.NewMem())
	f, _ := efs.Create("data")
	efs.SetSpace(4)
	n, err := f.Write([]byte("record"))
	fmt.Println(n, errors.Is(err, syscall.ENOSPC))
	efs.SetSpace(-1) // space returns
	n, err = f.Write([]byte("rd"))
	fmt.Println(n, err)
	// Output:
	// 4 true
	// 2 <nil>
}

func ExampleFS_InjectAfter() {
	efs := errorfs.New(vfs.NewMem())
	f, _ := efs.Create("data")
	efs.InjectAfter(errorfs.OpSync, 1, syscall.EIO)
	fmt.Println(f.Sync())
	fmt.Println(f.Sync())
	// Output:
	// <nil>
	// sync data: input/output error
}
