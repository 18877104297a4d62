package vfs_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/caskade/caskade/vfs"
)

const lockHelperEnv = "CASKADE_VFS_LOCK_HELPER"

// TestLockHelperProcess is not a test: TestOSLockAcrossProcesses runs the
// test binary with it to hold a lock in another process. It takes the lock
// named by the environment, says "locked", and holds the lock until its
// standard input closes.
func TestLockHelperProcess(t *testing.T) {
	name := os.Getenv(lockHelperEnv)
	if name == "" {
		t.Skip("helper process for TestOSLockAcrossProcesses")
	}
	l, err := vfs.OS().Lock(name)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("locked")
	io.Copy(io.Discard, os.Stdin)
	l.Close()
	os.Exit(0)
}

func TestOSLockAcrossProcesses(t *testing.T) {
	probe, err := vfs.OS().Lock(filepath.Join(t.TempDir(), "probe"))
	if errors.Is(err, vfs.ErrUnsupported) {
		t.Skip("no flock on this system")
	}
	ok(t, err)
	ok(t, probe.Close())
	tests := []struct {
		name string
		end  func(cmd *exec.Cmd, stdin io.Closer) error // how the holder goes away
	}{
		{"holder unlocks and exits", func(cmd *exec.Cmd, stdin io.Closer) error { return stdin.Close() }},
		{"holder is killed", func(cmd *exec.Cmd, stdin io.Closer) error { return cmd.Process.Kill() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := filepath.Join(t.TempDir(), "LOCK")
			cmd := exec.Command(os.Args[0], "-test.run=^TestLockHelperProcess$")
			cmd.Env = append(os.Environ(), lockHelperEnv+"="+name)
			stdin, err := cmd.StdinPipe()
			ok(t, err)
			stdout, err := cmd.StdoutPipe()
			ok(t, err)
			cmd.Stderr = os.Stderr
			ok(t, cmd.Start())
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })

			line, err := bufio.NewReader(stdout).ReadString('\n')
			if err != nil || line != "locked\n" {
				t.Fatalf("helper said %q, %v", line, err)
			}
			if l, err := vfs.OS().Lock(name); !errors.Is(err, vfs.ErrLocked) {
				if l != nil {
					l.Close()
				}
				t.Fatalf("Lock while another process holds it: %v, want ErrLocked", err)
			}

			ok(t, tt.end(cmd, stdin))
			cmd.Wait() // the lock dies with the process

			l, err := vfs.OS().Lock(name)
			if err != nil {
				t.Fatalf("Lock after the holder went away: %v", err)
			}
			ok(t, l.Close())
		})
	}
}

// SyncData syncs OS files with fdatasync (on Linux), other files with their
// own Sync: on the memory file system the data survives a crash.
func TestSyncData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	f, err := vfs.OS().Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("data"), 0); err != nil {
		t.Fatal(err)
	}
	if err := vfs.SyncData(f); err != nil {
		t.Fatalf("SyncData: %v", err)
	}
	f.Close()
	if err := vfs.SyncData(f); err == nil {
		t.Fatal("SyncData of a closed file succeeded")
	}

	m := vfs.NewMem()
	g, err := m.Create("g")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SyncDir("."); err != nil {
		t.Fatal(err)
	}
	g.WriteAt([]byte("kept"), 0)
	if err := vfs.SyncData(g); err != nil {
		t.Fatal(err)
	}
	g.WriteAt([]byte("lost"), 4)
	after := m.Crash(vfs.CrashOptions{})
	h, err := after.Open("g")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(h)
	if string(b) != "kept" {
		t.Fatalf("after a crash: %q, want the synced %q", b, "kept")
	}
}
