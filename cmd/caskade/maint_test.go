package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/caskade/caskade"
	"github.com/caskade/caskade/internal/record"
	"github.com/caskade/caskade/internal/segment"
)

// result is what one in-process run of the caskade command gave.
type result struct {
	stdout, stderr string
	err            error
}

// run runs "caskade args..." in-process with stdin as its input and
// buffers as its outputs (so stderr is not a terminal).
func run(t *testing.T, h *hooks, stdin io.Reader, args ...string) result {
	t.Helper()
	root := newRootCmd(h)
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	root.SetIn(stdin)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	if err != nil && strings.Contains(err.Error(), "\n") {
		t.Errorf("caskade %s: error is not one line: %q", strings.Join(args, " "), err)
	}
	return result{out.String(), errb.String(), err}
}

// mustRun runs the command and fails the test if it fails.
func mustRun(t *testing.T, args ...string) result {
	t.Helper()
	r := run(t, nil, nil, args...)
	if r.err != nil {
		t.Fatalf("caskade %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.err, r.stdout, r.stderr)
	}
	return r
}

// entry is a key's value, expiry and flags.
type entry struct {
	val   string
	exp   int64 // Unix milliseconds, 0 for none
	flags uint32
}

func openDB(t *testing.T, dir string, o *caskade.Options) *caskade.DB {
	t.Helper()
	db, err := caskade.Open(dir, o)
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	return db
}

// write sets every entry in db.
func write(t *testing.T, db *caskade.DB, m map[string]entry) {
	t.Helper()
	for k, e := range m {
		o := caskade.SetOptions{Flags: e.flags}
		if e.exp != 0 {
			o.ExpiresAt = time.UnixMilli(e.exp)
		}
		if err := db.SetEntry([]byte(k), []byte(e.val), o); err != nil {
			t.Fatal(err)
		}
	}
}

// contents reads every live pair of the database in dir (opened
// read-only), with expiry and flags.
func contents(t *testing.T, dir string) map[string]entry {
	t.Helper()
	db := openDB(t, dir, &caskade.Options{ReadOnly: true})
	defer db.Close()
	it, err := db.NewIterator(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	m := map[string]entry{}
	for ok := it.First(); ok; ok = it.Next() {
		v := string(it.Value())
		info := it.Info()
		e := entry{val: v, flags: info.Flags}
		if !info.ExpiresAt.IsZero() {
			e.exp = info.ExpiresAt.UnixMilli()
		}
		m[string(it.Key())] = e
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}

func sameContents(t *testing.T, what string, got, want map[string]entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d keys, want %d", what, len(got), len(want))
	}
	bad := 0
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("%s: key %q missing", what, k)
		case g != w:
			t.Errorf("%s: key %q = %+v, want %+v", what, k, g, w)
		default:
			continue
		}
		if bad++; bad > 10 {
			t.Fatalf("%s: too many differences", what)
		}
	}
}

// sample is a database's worth of entries with TTLs, flags, binary keys,
// an empty value and values long enough for multi-byte length varints.
func sample(n int) map[string]entry {
	exp := time.Now().Add(time.Hour).UnixMilli()
	m := map[string]entry{
		"":             {val: "the empty key"},
		"\x00bin\xff":  {val: "\x00\x01\x02", flags: 0xdeadbeef},
		"empty-value":  {val: ""},
		"big":          {val: strings.Repeat("x", 70000), exp: exp},
		"ttl-and-flag": {val: "v", exp: exp + 1, flags: 7},
	}
	for i := range n {
		e := entry{val: fmt.Sprintf("value-%05d-%s", i, strings.Repeat("y", i%200))}
		if i%3 == 0 {
			e.exp = exp + int64(i)
		}
		if i%5 == 0 {
			e.flags = uint32(i)
		}
		m[fmt.Sprintf("key-%05d", i)] = e
	}
	return m
}

// dataBytes sums the sizes of the data files in dir.
func dataBytes(t *testing.T, dir string) int64 {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.data"))
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, name := range names {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

// progressChars matches what a progress bar writes: carriage returns and
// ANSI escape sequences.
var progressChars = regexp.MustCompile("\r|\x1b\\[")

// Damage that open does not see (the hint file is intact) stops merge with
// one line that points to check, without the engine's nested prefixes.
func TestMergeOfDamagedData(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir, &caskade.Options{Sync: caskade.SyncNone, MaxFileSize: 8 << 10, MergeInterval: -1})
	for i := range 300 {
		if err := db.Set(fmt.Appendf(nil, "key-%04d", i), fmt.Appendf(nil, "value-%04d-%s", i, strings.Repeat("v", 50))); err != nil {
			t.Fatal(err)
		}
	}
	// Something to merge: with nothing dead, merge leaves the files be.
	if err := db.Delete([]byte("key-0299")); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "0000000001.data")
	flipAfter(t, data, "value-0010-", 5)
	r := run(t, nil, nil, "merge", dir)
	if r.err == nil || !errors.Is(r.err, caskade.ErrCorrupt) {
		t.Fatalf("merge of damaged data: %v, want ErrCorrupt", r.err)
	}
	msg := r.err.Error()
	if !strings.HasPrefix(msg, "merge "+dir+": ") || strings.Contains(msg, "caskade: ") ||
		!strings.Contains(msg, "caskade check "+dir+" shows the damage") {
		t.Errorf("merge of damaged data: %q, want one line starting %q, pointing to check, with no nested caskade: prefix", msg, "merge "+dir+": ")
	}
}

func TestMergeShrinksAndKeepsLiveKeys(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir, &caskade.Options{Sync: caskade.SyncNone, MaxFileSize: 8 << 10, MergeInterval: -1})
	want := map[string]entry{}
	for round := range 5 {
		for i := range 300 {
			k := fmt.Sprintf("key-%04d", i)
			v := fmt.Sprintf("round-%d-%s", round, strings.Repeat("v", 50))
			if err := db.Set([]byte(k), []byte(v)); err != nil {
				t.Fatal(err)
			}
			want[k] = entry{val: v}
		}
	}
	for i := 0; i < 300; i += 7 {
		k := fmt.Sprintf("key-%04d", i)
		if err := db.Delete([]byte(k)); err != nil {
			t.Fatal(err)
		}
		delete(want, k)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	before := dataBytes(t, dir)

	r := mustRun(t, "merge", dir)
	if !strings.HasPrefix(r.stdout, "merged "+dir+": ") || strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("merge summary = %q, want one line starting %q", r.stdout, "merged "+dir+": ")
	}
	if r.stderr != "" {
		t.Errorf("merge wrote to stderr without --verbose: %q", r.stderr)
	}
	after := dataBytes(t, dir)
	// Five rounds of overwrites: at most about a fifth is live.
	if after*3 > before {
		t.Errorf("data files hold %d bytes after merge, %d before: want at most a third", after, before)
	}
	sameContents(t, "after merge", contents(t, dir), want)

	// --verbose logs at info level.
	v := run(t, nil, nil, "merge", "--verbose", dir)
	if v.err != nil || !strings.Contains(v.stderr, "level=INFO") {
		t.Errorf("merge --verbose: err %v, stderr %q; want info logs", v.err, v.stderr)
	}
}

// fileState is the name, size, modification time and identity (os.SameFile)
// of every file in a directory: what "left untouched" means.
type fileState map[string]os.FileInfo

func filesIn(t *testing.T, dir string) fileState {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := fileState{}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = fi
	}
	return m
}

func (a fileState) same(b fileState) bool {
	return maps.EqualFunc(a, b, func(x, y os.FileInfo) bool {
		return os.SameFile(x, y) && x.Size() == y.Size() && x.ModTime().Equal(y.ModTime())
	})
}

// merge on a database with nothing dead says so and leaves every file as
// it was (--force rewrites them anyway); it merges once a key is deleted
// and then, with only the tombstone that carries the newest version left
// over, has nothing to do again; and it merges keys that have expired,
// which the file statistics count as live.
func TestMergeWithNothingDead(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	clock := start
	db := openDB(t, dir, &caskade.Options{Sync: caskade.SyncNone, MaxFileSize: 8 << 10, MergeInterval: -1,
		Now: func() time.Time { return clock }})
	want := map[string]entry{}
	for i := range 300 {
		k, v := fmt.Sprintf("key-%04d", i), fmt.Sprintf("value-%04d-%s", i, strings.Repeat("v", 50))
		e := entry{val: v}
		if i%100 == 7 {
			e.exp = start.Add(time.Duration(i+1) * time.Minute).UnixMilli() // 8, 108 and 208 minutes
		}
		write(t, db, map[string]entry{k: e})
		want[k] = e
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(filesIn(t, dir)); n < 4 {
		t.Fatalf("%d files: the test wants several sealed data files", n)
	}
	h := &hooks{now: func() time.Time { return clock }}
	mergeOut := func(args ...string) string {
		t.Helper()
		r := run(t, h, nil, append([]string{"merge"}, args...)...)
		if r.err != nil || r.stderr != "" {
			t.Fatalf("merge %v: %v, stderr %q", args, r.err, r.stderr)
		}
		return r.stdout
	}
	nothing := "merge " + dir + ": nothing to merge (no overwritten, deleted or expired records); files left as they were\n"
	before := filesIn(t, dir)
	if out := mergeOut(dir); out != nothing {
		t.Errorf("merge with nothing dead: %q, want %q", out, nothing)
	}
	if !before.same(filesIn(t, dir)) {
		t.Errorf("merge with nothing dead changed the files")
	}
	if out := mergeOut("--force", dir); !strings.HasPrefix(out, "merged "+dir+": ") {
		t.Errorf("merge --force: %q, want a summary", out)
	}
	if before.same(filesIn(t, dir)) {
		t.Errorf("merge --force left the files as they were")
	}
	if out := mergeOut(dir); out != nothing {
		t.Errorf("merge after merge --force: %q, want %q", out, nothing)
	}
	sameContents(t, "after merge --force", contents(t, dir), want)

	// A delete: merged once, then nothing to merge, although the kept
	// tombstone counts as dead in the file statistics.
	db = openDB(t, dir, &caskade.Options{MergeInterval: -1, Now: func() time.Time { return clock }})
	if err := db.Delete([]byte("key-0299")); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	delete(want, "key-0299")
	if out := mergeOut(dir); !strings.HasPrefix(out, "merged "+dir+": ") {
		t.Errorf("merge after a delete: %q, want a summary", out)
	}
	before = filesIn(t, dir)
	if out := mergeOut(dir); out != nothing {
		t.Errorf("a second merge after a delete: %q, want %q", out, nothing)
	}
	if !before.same(filesIn(t, dir)) {
		t.Errorf("a second merge after a delete changed the files")
	}
	sameContents(t, "after merging a delete", contents(t, dir), want)

	// Two hours later two keys have expired: merge drops them.
	clock = start.Add(2 * time.Hour)
	size := dataBytes(t, dir)
	if out := mergeOut(dir); !strings.Contains(out, "records") || !strings.HasPrefix(out, "merged "+dir+": ") {
		t.Errorf("merge with expired keys: %q, want a summary", out)
	}
	if after := dataBytes(t, dir); after >= size {
		t.Errorf("merge with expired keys: %d bytes of data files, %d before", after, size)
	}
	delete(want, "key-0007")
	delete(want, "key-0107")
	if out := mergeOut(dir); out != nothing {
		t.Errorf("merge after merging expired keys: %q, want %q", out, nothing)
	}
	db = openDB(t, dir, &caskade.Options{ReadOnly: true, Now: func() time.Time { return start }})
	st := db.Stats()
	db.Close()
	if st.Keys != len(want) {
		t.Errorf("after merging expired keys: %d keys on disk (read an hour before they expired), want %d", st.Keys, len(want))
	}
}

// A directory that holds no database (a mistyped path) is refused rather
// than checked as an empty database with "no damage", or given a lock file.
func TestMaintenanceRefusesADirectoryWithoutADatabase(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644)
	for _, args := range [][]string{
		{"merge", dir},
		{"backup", dir, filepath.Join(t.TempDir(), "b")},
		{"check", dir},
		{"dump", dir, "-o", filepath.Join(t.TempDir(), "dump")},
	} {
		r := run(t, nil, nil, args...)
		if want := dir + " holds no caskade database (no lock, data or hint file)"; r.err == nil || r.err.Error() != want {
			t.Errorf("caskade %s: %v, want %q", strings.Join(args, " "), r.err, want)
		}
	}
	if names, _ := os.ReadDir(dir); len(names) != 1 {
		t.Errorf("the refused commands left files in %s: %v", dir, names)
	}
}

func TestMaintenanceRefusesADirectoryInUse(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir, nil)
	write(t, db, map[string]entry{"k": {val: "v"}})
	dump := filepath.Join(t.TempDir(), "dump")
	backup := t.TempDir()
	empty := t.TempDir()
	if err := openDB(t, empty, nil).Close(); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "backup", empty, backup) // an empty but valid backup to restore
	tests := [][]string{
		{"merge", dir},
		{"backup", dir, filepath.Join(t.TempDir(), "b")},
		{"check", dir},
		{"check", dir, "--repair", filepath.Join(t.TempDir(), "r")},
		{"dump", dir, "-o", dump},
		{"load", dir, "-i", os.DevNull},
		{"restore", "--force", backup, dir},
	}
	want := dir + " is in use by a running caskade (or another process)"
	for _, args := range tests {
		r := run(t, nil, nil, args...)
		if r.err == nil || r.err.Error() != want || !errors.Is(r.err, caskade.ErrLocked) {
			t.Errorf("caskade %s: err %v, want %q wrapping ErrLocked", strings.Join(args, " "), r.err, want)
		}
	}
	if _, err := os.Stat(dump); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused dump left %s: %v", dump, err)
	}
	if got, err := db.Get([]byte("k")); err != nil || string(got) != "v" {
		t.Errorf("the open database after refused commands: Get = %q, %v", got, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// The same for a directory that a running server holds.
	sdir := t.TempDir()
	srv, err := start(t, "--dir", sdir, "--redis-addr=127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, nil, nil, "merge", sdir)
	if want := sdir + " is in use by a running caskade (or another process)"; r.err == nil || r.err.Error() != want {
		t.Errorf("merge of a served directory: %v, want %q", r.err, want)
	}
	srv.stop(t)
	mustRun(t, "merge", sdir) // the server is gone, so the lock is free
}

func TestMaintenanceArgumentErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dirAsFile := t.TempDir()
	db := t.TempDir()
	if err := openDB(t, db, nil).Close(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"merge", missing}, missing + ": no such directory"},
		{[]string{"check", missing}, missing + ": no such directory"},
		{[]string{"dump", missing}, missing + ": no such directory"},
		{[]string{"backup", file, t.TempDir()}, file + " is not a directory"},
		{[]string{"restore", missing, t.TempDir()}, missing + ": no such directory"},
		{[]string{"load", t.TempDir(), "--batch-bytes", "0"}, "--batch-bytes 0: want 1 to"},
		// The whole range, not "0 or more" and then a pario error.
		{[]string{"backup", db, filepath.Join(t.TempDir(), "b"), "--workers", "-1"}, "--workers -1: want 0 (one per CPU) to 1024"},
		{[]string{"backup", db, filepath.Join(t.TempDir(), "b"), "--workers", "1025"}, "--workers 1025: want 0 (one per CPU) to 1024"},
		{[]string{"restore", t.TempDir(), filepath.Join(t.TempDir(), "r"), "--workers", "1025"}, "--workers 1025: want 0 (one per CPU) to 1024"},
		{[]string{"merge"}, "accepts 1 arg(s), received 0"},
		{[]string{"backup", t.TempDir()}, "accepts 2 arg(s), received 1"},
		// An empty input, a directory as input or output, a file as the
		// database: said in those words, not as a dump "header" of zero
		// bytes, a failed rename, or "mkdir FILE: not a directory".
		{[]string{"load", filepath.Join(t.TempDir(), "db"), "-i", empty}, "load into "},
		{[]string{"load", filepath.Join(t.TempDir(), "db"), "-i", os.DevNull}, "load into "},
		{[]string{"load", t.TempDir(), "-i", dirAsFile}, "load: -i " + dirAsFile + " is a directory (give a dump file)"},
		{[]string{"load", file, "-i", empty}, "open " + file + ": " + file + " is not a directory"},
		{[]string{"load", filepath.Join(file, "db"), "-i", empty}, "open " + filepath.Join(file, "db") + ": " + file + " is not a directory"},
		{[]string{"dump", db, "-o", dirAsFile}, "dump: -o " + dirAsFile + " is a directory (give a file name)"},
		{[]string{"dump", db, "-o", filepath.Join(missing, "dump")}, "dump: -o " + filepath.Join(missing, "dump") + ": " + missing + ": no such directory"},
		{[]string{"dump", db, "-o", filepath.Join(file, "dump")}, "dump: -o " + filepath.Join(file, "dump") + ": " + file + " is not a directory"},
	}
	for _, tt := range tests {
		r := run(t, nil, nil, tt.args...)
		if r.err == nil || !strings.HasPrefix(r.err.Error(), tt.want) {
			t.Errorf("caskade %s: err %v, want one starting %q", strings.Join(tt.args, " "), r.err, tt.want)
		}
		if tt.args[0] == "load" && tt.want == "load into " && !strings.HasSuffix(r.err.Error(), "bad dump stream: the input is empty") {
			t.Errorf("caskade %s: err %v, want one saying the input is empty", strings.Join(tt.args, " "), r.err)
		}
	}
	if names, _ := os.ReadDir(dirAsFile); len(names) != 0 {
		t.Errorf("refused commands left files in %s: %v", dirAsFile, names)
	}
	// A load that created its database and loaded nothing removes it; one
	// into a database that was there leaves it.
	newDB := filepath.Join(t.TempDir(), "db")
	if r := run(t, nil, nil, "load", newDB, "-i", empty); r.err == nil {
		t.Fatal("load of an empty input succeeded")
	}
	if _, err := os.Stat(newDB); !os.IsNotExist(err) {
		t.Errorf("a failed load left the database it created: %v", err)
	}
	if r := run(t, nil, nil, "load", db, "-i", empty); r.err == nil {
		t.Fatal("load of an empty input succeeded")
	}
	if names, err := os.ReadDir(db); err != nil || len(names) == 0 {
		t.Errorf("a failed load into an existing database removed it: %v", err)
	}
}

func TestBackupRestore(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir, &caskade.Options{Sync: caskade.SyncNone, MaxFileSize: 16 << 10})
	want := sample(500)
	write(t, db, want)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	for _, link := range []bool{false, true} {
		t.Run(fmt.Sprintf("link=%v", link), func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "backup")
			args := []string{"backup", dir, dest}
			if link {
				args = append(args, "--link")
			}
			r := mustRun(t, args...)
			if !strings.HasPrefix(r.stdout, "backup of "+dir+" in "+dest+": ") {
				t.Errorf("backup summary = %q", r.stdout)
			}
			if _, err := os.Stat(filepath.Join(dest, caskade.ManifestName)); err != nil {
				t.Errorf("backup has no manifest: %v", err)
			}
			fresh := filepath.Join(t.TempDir(), "restored")
			r = mustRun(t, "restore", dest, fresh)
			if !strings.HasPrefix(r.stdout, "restored "+dest+" into "+fresh+": ") {
				t.Errorf("restore summary = %q", r.stdout)
			}
			sameContents(t, "restored", contents(t, fresh), want)
		})
	}

	// A second backup into the same, now non-empty, destination fails.
	dest := filepath.Join(t.TempDir(), "backup")
	mustRun(t, "backup", dir, dest)
	if r := run(t, nil, nil, "backup", dir, dest); r.err == nil || !errors.Is(r.err, caskade.ErrNotEmpty) {
		t.Errorf("backup into a non-empty directory: %v, want ErrNotEmpty", r.err)
	}

	// Restoring over another database needs --force.
	other := t.TempDir()
	odb := openDB(t, other, nil)
	write(t, odb, map[string]entry{"other": {val: "database"}})
	if err := odb.Close(); err != nil {
		t.Fatal(err)
	}
	r := run(t, nil, nil, "restore", dest, other)
	if r.err == nil || !errors.Is(r.err, caskade.ErrNotEmpty) || !strings.Contains(r.err.Error(), "--force") {
		t.Fatalf("restore into a non-empty directory: %v, want ErrNotEmpty naming --force", r.err)
	}
	sameContents(t, "refused restore target", contents(t, other), map[string]entry{"other": {val: "database"}})
	mustRun(t, "restore", "--force", dest, other)
	sameContents(t, "forced restore", contents(t, other), want)

	// Restoring a backup onto itself, however the two paths are spelled,
	// is refused: --force would remove the backup's files before copying
	// them. The backup stays whole.
	alias := filepath.Join(t.TempDir(), "alias")
	if err := os.Symlink(dest, alias); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{dest, dest + "/.", alias} {
		r := run(t, nil, nil, "restore", "--force", dest, target)
		if r.err == nil || !strings.Contains(r.err.Error(), "are the same directory") {
			t.Errorf("restore --force %s %s: %v, want a refusal", dest, target, r.err)
		}
	}
	fresh := filepath.Join(t.TempDir(), "fresh")
	mustRun(t, "restore", dest, fresh)
	sameContents(t, "restored after the refused restores onto the backup", contents(t, fresh), want)

	// A damaged backup is refused and installs nothing.
	names, _ := filepath.Glob(filepath.Join(dest, "*.data"))
	if len(names) == 0 {
		t.Fatal("backup has no data files")
	}
	flipByte(t, names[0], 100)
	fresh = filepath.Join(t.TempDir(), "fresh")
	if r := run(t, nil, nil, "restore", dest, fresh); r.err == nil || !errors.Is(r.err, caskade.ErrCorrupt) {
		t.Errorf("restore of a damaged backup: %v, want ErrCorrupt", r.err)
	}
	if got, _ := filepath.Glob(filepath.Join(fresh, "*.data")); len(got) != 0 {
		t.Errorf("a refused restore installed %v", got)
	}
}

// flipByte inverts the byte at offset off of the file.
// flipAfter flips the byte delta bytes into the last occurrence of marker
// in the file at path.
func flipAfter(t *testing.T, path, marker string, delta int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.LastIndex(b, []byte(marker))
	if at < 0 {
		t.Fatalf("%s does not hold %q", path, marker)
	}
	flipByte(t, path, int64(at+delta))
}

func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if off >= int64(len(b)) {
		t.Fatalf("%s has %d bytes, cannot flip byte %d", path, len(b), off)
	}
	b[off] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCheckAndRepair(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir, &caskade.Options{Sync: caskade.SyncNone, MaxFileSize: 8 << 10, MergeInterval: -1})
	want := map[string]entry{}
	for i := range 600 {
		k := fmt.Sprintf("key-%05d", i)
		e := entry{val: fmt.Sprintf("value-%05d-%s", i, strings.Repeat("z", 40)), flags: uint32(i)}
		if i%4 == 0 {
			e.exp = time.Now().Add(time.Hour).UnixMilli()
		}
		write(t, db, map[string]entry{k: e})
		want[k] = e
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	r := mustRun(t, "check", dir)
	if !strings.Contains(r.stdout, "checked "+dir+": ") || !strings.HasSuffix(r.stdout, "no damage\n") ||
		strings.Contains(r.stdout, "damaged:") {
		t.Fatalf("check of a clean database printed %q", r.stdout)
	}

	// Damage the value of one key in the oldest (sealed) data file, and
	// remove its hint file so that only the scan can find the damage.
	data := filepath.Join(dir, "0000000001.data")
	b, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	victim := "key-00010"
	at := bytes.Index(b, []byte(want[victim].val))
	if at < 0 {
		t.Fatalf("%s does not hold %s's value", data, victim)
	}
	flipByte(t, data, int64(at+5))
	if err := os.Remove(filepath.Join(dir, "0000000001.hint")); err != nil {
		t.Fatal(err)
	}
	rep, err := caskade.Check(context.Background(), dir, nil)
	if err != nil || len(rep.Damage) == 0 {
		t.Fatalf("caskade.Check: %d damaged ranges, %v; want damage", len(rep.Damage), err)
	}

	r = run(t, nil, nil, "check", dir)
	wantErr := fmt.Sprintf("%d damaged range", len(rep.Damage))
	if len(rep.Damage) != 1 {
		wantErr += "s"
	}
	wantErr += " in " + dir
	if r.err == nil || r.err.Error() != wantErr || !errors.Is(r.err, caskade.ErrCorrupt) {
		t.Errorf("check of a damaged database: err %v, want %q", r.err, wantErr)
	}
	for _, d := range rep.Damage {
		line := fmt.Sprintf("damaged: %s offset %d end %d ", d.Path, d.Offset, d.End)
		if !strings.Contains(r.stdout, line) {
			t.Errorf("check output lacks %q:\n%s", line, r.stdout)
		}
	}
	if !strings.Contains(r.stdout, wantErr[:len(wantErr)-len(" in "+dir)]+"\n") {
		t.Errorf("check summary does not count the damage:\n%s", r.stdout)
	}

	// Commands that open the database point to check.
	for _, cmd := range []string{"merge", "dump"} {
		r := run(t, nil, nil, cmd, dir)
		if r.err == nil || !errors.Is(r.err, caskade.ErrCorrupt) || !strings.Contains(r.err.Error(), "caskade check "+dir) {
			t.Errorf("%s of a damaged database: %v, want ErrCorrupt pointing to caskade check", cmd, r.err)
		}
	}

	// The keys whose records lie outside every damaged range are undamaged.
	undamaged := map[string]entry{}
	for k, e := range want {
		i := bytes.Index(b, []byte(k))
		damaged := false
		for _, d := range rep.Damage {
			if i >= 0 && int64(i) >= d.Offset && int64(i) < d.End {
				damaged = true
			}
		}
		if !damaged {
			undamaged[k] = e
		}
	}
	if _, ok := undamaged[victim]; ok {
		t.Fatalf("%s is not in a damaged range %+v", victim, rep.Damage)
	}

	repaired := filepath.Join(t.TempDir(), "repaired")
	r = run(t, nil, nil, "check", dir, "--repair", repaired)
	if r.err == nil || r.err.Error() != wantErr {
		t.Errorf("check --repair of a damaged database: err %v, want %q", r.err, wantErr)
	}
	got := contents(t, repaired)
	wantLine := fmt.Sprintf("repaired copy of %s in %s: %d keys kept\n", dir, repaired, len(got))
	if !strings.Contains(r.stdout, wantLine) {
		t.Errorf("check --repair output lacks %q:\n%s", wantLine, r.stdout)
	}
	for k, e := range undamaged {
		if g, ok := got[k]; !ok || g != e {
			t.Errorf("repaired copy: %q = %+v (present %v), want %+v", k, g, ok, e)
		}
	}
	if _, ok := got[victim]; ok {
		t.Errorf("repaired copy holds the damaged key %s", victim)
	}
	// The repaired copy checks clean; the source is unchanged.
	mustRun(t, "check", repaired)
	if after, err := os.ReadFile(data); err != nil || !bytes.Equal(after[:at], b[:at]) || after[at+5] == b[at+5] {
		t.Errorf("check --repair changed the damaged source file (err %v)", err)
	}
}

func TestDumpLoadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir, &caskade.Options{Sync: caskade.SyncNone})
	want := sample(2000)
	write(t, db, want)
	// A deleted key and an expired one are not dumped.
	if err := db.Set([]byte("deleted"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := db.Delete([]byte("deleted")); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// Through a file.
	file := filepath.Join(t.TempDir(), "db.dump")
	r := mustRun(t, "dump", dir, "-o", file)
	wantSum := fmt.Sprintf("dumped %s to %s: %d pairs, ", dir, file, len(want))
	if !strings.HasPrefix(r.stdout, wantSum) {
		t.Errorf("dump summary = %q, want it to start %q", r.stdout, wantSum)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(file), ".*")); len(leftovers) != 0 {
		t.Errorf("dump left temporary files: %v", leftovers)
	}
	loaded := filepath.Join(t.TempDir(), "loaded")
	r = mustRun(t, "load", loaded, "-i", file, "--batch-bytes", "65536")
	if wantSum := fmt.Sprintf("loaded %d pairs (", len(want)); !strings.HasPrefix(r.stdout, wantSum) {
		t.Errorf("load summary = %q, want it to start %q", r.stdout, wantSum)
	}
	sameContents(t, "loaded from a file", contents(t, loaded), want)

	// Through standard output and input.
	r = mustRun(t, "dump", dir)
	if !strings.HasPrefix(r.stdout, "caskade-dump 1\n") {
		t.Fatalf("dump to stdout does not start with the header: %q", r.stdout[:min(len(r.stdout), 20)])
	}
	fromFile, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if r.stdout != string(fromFile) {
		t.Errorf("dump to stdout (%d bytes) differs from dump -o (%d bytes)", len(r.stdout), len(fromFile))
	}
	if dash := mustRun(t, "dump", dir, "-o", "-"); dash.stdout != r.stdout {
		t.Errorf("dump -o - wrote %d bytes to stdout, want the %d of dump", len(dash.stdout), len(r.stdout))
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("dump -o made %v (%v), want mode 0600: it holds every value", fi.Mode(), err)
	}
	piped := filepath.Join(t.TempDir(), "piped")
	if lr := run(t, nil, strings.NewReader(r.stdout), "load", piped); lr.err != nil {
		t.Fatalf("load from stdin: %v", lr.err)
	}
	sameContents(t, "loaded from stdin", contents(t, piped), want)
	dashed := filepath.Join(t.TempDir(), "dashed")
	if lr := run(t, nil, strings.NewReader(r.stdout), "load", dashed, "-i", "-"); lr.err != nil {
		t.Fatalf("load -i -: %v", lr.err)
	}
	sameContents(t, "loaded with -i -", contents(t, dashed), want)

	// A cut stream fails with a one-line reason; the batches before stay.
	cut := filepath.Join(t.TempDir(), "cut")
	lr := run(t, nil, strings.NewReader(r.stdout[:len(r.stdout)/2]), "load", cut)
	if lr.err == nil || !errors.Is(lr.err, caskade.ErrBadDump) || !strings.HasPrefix(lr.err.Error(), "load into "+cut) {
		t.Errorf("load of a cut stream: %v, want ErrBadDump", lr.err)
	}
	// Something that is not a dump at all.
	if lr := run(t, nil, strings.NewReader("*1\r\n$4\r\nPING\r\n"), "load", t.TempDir()); lr.err == nil || !errors.Is(lr.err, caskade.ErrBadDump) {
		t.Errorf("load of a non-dump: %v, want ErrBadDump", lr.err)
	}
}

func TestProgressQuietWithoutTerminal(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir, &caskade.Options{Sync: caskade.SyncNone, MaxFileSize: 16 << 10})
	write(t, db, sample(1000))
	write(t, db, sample(1000)) // overwrites, for merge to do something
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	dump := filepath.Join(t.TempDir(), "dump")
	backup := filepath.Join(t.TempDir(), "backup")
	commands := [][]string{
		{"merge", dir},
		{"check", dir, "--repair", filepath.Join(t.TempDir(), "repaired")},
		{"backup", dir, backup},
		{"restore", backup, filepath.Join(t.TempDir(), "restored")},
		{"dump", dir, "-o", dump},
		{"load", filepath.Join(t.TempDir(), "loaded"), "-i", dump},
	}
	for _, quiet := range []bool{true, false} {
		for _, args := range commands {
			args := append([]string(nil), args...)
			if !quiet {
				// Fresh targets for the second round.
				switch args[0] {
				case "merge":
					args = []string{"merge", "--force", dir} // the first round left nothing dead
				case "check":
					args[3] = filepath.Join(t.TempDir(), "repaired")
				case "backup", "restore":
					args[2] = filepath.Join(t.TempDir(), "target")
					if args[0] == "restore" {
						args[1] = backup
					}
				case "load":
					args[1] = filepath.Join(t.TempDir(), "loaded")
				}
			}
			r := run(t, &hooks{progress: !quiet}, nil, args...)
			if r.err != nil {
				t.Fatalf("caskade %s: %v", strings.Join(args, " "), r.err)
			}
			shown := progressChars.MatchString(r.stderr)
			if quiet && (shown || r.stderr != "") {
				t.Errorf("caskade %s with stderr not a terminal wrote %q", strings.Join(args, " "), r.stderr)
			}
			if !quiet && !shown {
				t.Errorf("caskade %s with progress forced on drew no bar: stderr %q", strings.Join(args, " "), r.stderr)
			}
		}
	}
}

// A byte bar says how many bytes are done out of how many, not only the
// share and the rate.
func TestByteBarShowsBytesDoneOfTotal(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, true, 0, "backing up", true, false)
	p.setMax(3 << 20)
	p.bar.RenderBlank() // the bar throttles its redraws: draw it now
	p.done()
	if !strings.Contains(b.String(), "0 B/3.1 MB") {
		t.Errorf("a byte bar of 3 MiB drew %q, want it to show 0 B/3.1 MB", b.String())
	}
}

func TestIsTerminal(t *testing.T) {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ws := []any{&bytes.Buffer{}, null, f, (*os.File)(nil)}
	// Other character devices are not terminals either: a dump written to
	// one is not refused, and no progress bar is drawn into it.
	if full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0); err == nil {
		defer full.Close()
		ws = append(ws, full)
	}
	for _, w := range ws {
		if isTerminal(w) {
			t.Errorf("isTerminal(%T %v) = true", w, w)
		}
	}
}

func TestPairCounter(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir, &caskade.Options{Sync: caskade.SyncNone})
	defer db.Close()
	want := sample(300)
	write(t, db, want)
	var full bytes.Buffer
	st, err := db.Dump(context.Background(), &full)
	if err != nil {
		t.Fatal(err)
	}
	if st.Pairs != len(want) {
		t.Fatalf("Dump wrote %d pairs, want %d", st.Pairs, len(want))
	}
	// Whole, and in chunks that split every field somewhere.
	for _, chunk := range []int{full.Len(), 1, 2, 3, 7, 4096} {
		var out bytes.Buffer
		var last int64
		calls := 0
		c := &pairCounter{w: &out, onPairs: func(n int64) {
			if n <= last {
				t.Errorf("chunk %d: count went from %d to %d", chunk, last, n)
			}
			last = n
			calls++
		}}
		for b := full.Bytes(); len(b) > 0; {
			n := min(chunk, len(b))
			if _, err := c.Write(b[:n]); err != nil {
				t.Fatal(err)
			}
			b = b[n:]
		}
		if c.pairs != int64(st.Pairs) || last != int64(st.Pairs) || calls == 0 {
			t.Errorf("chunk %d: counted %d pairs (last report %d), want %d", chunk, c.pairs, last, st.Pairs)
		}
		if !bytes.Equal(out.Bytes(), full.Bytes()) {
			t.Errorf("chunk %d: the stream was not passed through unchanged", chunk)
		}
	}
}

// dump -o to a named pipe (or /dev/null, /dev/stdout) writes into it: a
// temporary file renamed over it would replace the pipe or device with a
// regular file holding the dump.
func TestDumpToANamedPipe(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir, &caskade.Options{Sync: caskade.SyncNone})
	want := sample(20)
	delete(want, "big") // the dump must fit in the pipe's buffer
	write(t, db, want)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// Open for reading without waiting for a writer, so that the dump's
	// open for writing does not block either.
	rd, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	r := mustRun(t, "dump", dir, "-o", fifo)
	if !strings.HasPrefix(r.stdout, "dumped "+dir+" to "+fifo+": ") {
		t.Errorf("dump summary = %q", r.stdout)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode().Type() != os.ModeNamedPipe {
		t.Fatalf("after dump -o, %s is %v (%v), want the named pipe it was", fifo, fi.Mode(), err)
	}
	got, err := io.ReadAll(rd)
	if err != nil {
		t.Fatal(err)
	}
	loadsAs(t, "what the pipe carried", got, want)
}

// restore --force removes the database in DIR and leaves every other file
// alone, those whose names merely end in .tmp too.
func TestRestoreForceKeepsFilesItDoesNotOwn(t *testing.T) {
	want := map[string]entry{"k": {val: "v"}}
	backup := backupOf(t, want)

	dir := t.TempDir()
	odb := openDB(t, dir, nil)
	write(t, odb, map[string]entry{"old": {val: "database"}})
	if err := odb.Close(); err != nil {
		t.Fatal(err)
	}
	theirs := []string{"notes.tmp", "MANIFEST.json.bak", "0000000001.data.bak", "x.data", "1.hint"}
	for _, n := range theirs {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("not caskade's"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustRun(t, "restore", "--force", backup, dir)
	for _, n := range theirs {
		if b, err := os.ReadFile(filepath.Join(dir, n)); err != nil || string(b) != "not caskade's" {
			t.Errorf("restore --force removed or changed %s, which caskade does not own: %q, %v", n, b, err)
		}
	}
	sameContents(t, "forced restore", contents(t, dir), want)
}

// A load that stops on a cut stream says how many pairs it wrote (those of
// the batches before the damage, not every pair it read) and where in the
// stream the damage is; a load that wrote nothing leaves no database.
func TestLoadOfACutStreamSaysWhatItWrote(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir, &caskade.Options{Sync: caskade.SyncNone})
	m := map[string]entry{}
	for i := range 100 {
		m[fmt.Sprintf("key-%03d", i)] = entry{val: strings.Repeat("v", 50)}
	}
	write(t, db, m)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	dump := mustRun(t, "dump", dir).stdout
	cut := dump[:len(dump)*3/4]
	byteRE := regexp.MustCompile(` at byte (\d+)$`)
	for _, batch := range []string{"1000", "1000000"} {
		into := filepath.Join(t.TempDir(), "loaded")
		r := run(t, nil, strings.NewReader(cut), "load", into, "--batch-bytes", batch)
		if r.err == nil || !errors.Is(r.err, caskade.ErrBadDump) {
			t.Fatalf("batch %s: load of a cut stream: %v, want ErrBadDump", batch, r.err)
		}
		msg := r.err.Error()
		if mm := byteRE.FindStringSubmatch(msg); mm == nil || mm[1] == "0" {
			t.Errorf("batch %s: %q does not say at which byte the stream is cut", batch, msg)
		} else if at, _ := strconv.Atoi(mm[1]); at > len(cut) || at < len(cut)-70 {
			t.Errorf("batch %s: %q: the stream is cut in the frame that starts before byte %d", batch, msg, len(cut))
		}
		if _, err := os.Stat(into); os.IsNotExist(err) {
			if !strings.Contains(msg, "(nothing loaded)") {
				t.Errorf("batch %s: %q, but the load removed the database it made", batch, msg)
			}
			continue
		}
		n := len(contents(t, into))
		if n == 0 {
			t.Errorf("batch %s: %q left an empty database behind", batch, msg)
		}
		if want := fmt.Sprintf("(%d pairs loaded before the error stay)", n); !strings.Contains(msg, want) {
			t.Errorf("batch %s: %q, want it to say %q: the database holds %d keys", batch, msg, want, n)
		}
	}
}

// A data file shorter than its hint file says lost records that were
// sealed and synced (here the delete at its end, which brings the deleted
// key back): check reports that as damage, not as a torn write, whether or
// not the file is the newest.
func TestCheckFindsADataFileCutShort(t *testing.T) {
	for _, newest := range []bool{true, false} {
		t.Run(fmt.Sprintf("newest=%v", newest), func(t *testing.T) {
			dir := t.TempDir()
			db := openDB(t, dir, &caskade.Options{Sync: caskade.SyncNone, MergeInterval: -1})
			write(t, db, map[string]entry{"a": {val: "1"}, "b": {val: "2"}, "gone": {val: "3"}})
			if err := db.Delete([]byte("gone")); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			data := filepath.Join(dir, "0000000001.data")
			if !newest {
				// A later file makes 1 a sealed file that is not the newest.
				db := openDB(t, dir, &caskade.Options{Sync: caskade.SyncNone, MergeInterval: -1})
				write(t, db, map[string]entry{"c": {val: "4"}})
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "0000000001.hint")); err != nil {
				t.Fatalf("no hint file for %s: %v", data, err)
			}
			fi, err := os.Stat(data)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(data, fi.Size()-5); err != nil {
				t.Fatal(err)
			}
			r := run(t, nil, nil, "check", dir)
			if r.err == nil || !errors.Is(r.err, caskade.ErrCorrupt) {
				t.Errorf("check of a data file cut short: %v, want damage\n%s", r.err, r.stdout)
			}
			want := fmt.Sprintf("damaged: %s offset ", data)
			if !strings.Contains(r.stdout, want) || !strings.Contains(r.stdout, fmt.Sprintf("hint file describes %d bytes", fi.Size())) {
				t.Errorf("check output lacks %q and the size the hint file describes:\n%s", want, r.stdout)
			}
			if strings.Contains(r.stdout, "torn tail") {
				t.Errorf("check calls the lost records a torn tail:\n%s", r.stdout)
			}
			// Open refuses it, pointing to check...
			if r := run(t, nil, nil, "dump", dir); r.err == nil || !errors.Is(r.err, caskade.ErrCorrupt) ||
				!strings.Contains(r.err.Error(), "caskade check "+dir) {
				t.Errorf("dump of a database whose data file was cut short: %v, want ErrCorrupt pointing to check", r.err)
			}
			// ...and check --repair salvages what is left: the delete is
			// lost, so the deleted key is back, as documented.
			repaired := filepath.Join(t.TempDir(), "repaired")
			run(t, nil, nil, "check", dir, "--repair", repaired)
			got := contents(t, repaired)
			for _, k := range []string{"a", "b", "gone"} {
				if _, ok := got[k]; !ok {
					t.Errorf("repaired copy lacks %q: %v", k, got)
				}
			}
		})
	}
}

// Pairs whose expiry passed before the load are skipped, and the summary
// counts them apart from the pairs it loaded.
func TestLoadCountsExpiredPairsApart(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir, &caskade.Options{Sync: caskade.SyncNone})
	soon := time.Now().Add(time.Hour).UnixMilli()
	write(t, db, map[string]entry{
		"stays":   {val: "1", exp: soon + 3600_000, flags: 9},
		"expires": {val: "2", exp: soon},
		"forever": {val: "3"},
	})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "dump")
	mustRun(t, "dump", dir, "-o", file)
	into := filepath.Join(t.TempDir(), "loaded")
	later := time.UnixMilli(soon).Add(time.Minute)
	r := run(t, &hooks{now: func() time.Time { return later }}, nil, "load", into, "-i", file)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if want := "loaded 2 pairs (14 bytes of keys and values) into " + into + ", skipped 1 expired pair, "; !strings.HasPrefix(r.stdout, want) {
		t.Errorf("load summary = %q, want it to start %q", r.stdout, want)
	}
	sameContents(t, "loaded", contents(t, into), map[string]entry{
		"stays":   {val: "1", exp: soon + 3600_000, flags: 9},
		"forever": {val: "3"},
	})
}

// loadsAs loads the dump stream into a new database with "caskade load"
// and checks that it holds exactly want.
func loadsAs(t *testing.T, what string, stream []byte, want map[string]entry) {
	t.Helper()
	loaded := filepath.Join(t.TempDir(), "loaded")
	if r := run(t, nil, bytes.NewReader(stream), "load", loaded); r.err != nil {
		t.Fatalf("load of %s (%d bytes): %v", what, len(stream), r.err)
	}
	sameContents(t, "loaded from "+what, contents(t, loaded), want)
}

// backupOf writes want into a new database and returns the directory of
// a backup of it made by "caskade backup".
func backupOf(t *testing.T, want map[string]entry) string {
	t.Helper()
	src := t.TempDir()
	db := openDB(t, src, &caskade.Options{Sync: caskade.SyncNone})
	write(t, db, want)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(t.TempDir(), "backup")
	mustRun(t, "backup", src, backup)
	return backup
}

// A restore refused because DIR is not empty leaves DIR as it was: no lock
// file appears among the files of a directory it will not touch.
func TestRefusedRestoreLeavesTheDirectoryAlone(t *testing.T) {
	backup := backupOf(t, map[string]entry{"k": {val: "v"}})
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, nil, nil, "restore", backup, dir)
	if r.err == nil || !errors.Is(r.err, caskade.ErrNotEmpty) {
		t.Fatalf("restore into a non-empty directory: %v, want ErrNotEmpty", r.err)
	}
	names, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 || names[0].Name() != "notes.txt" {
		var got []string
		for _, n := range names {
			got = append(got, n.Name())
		}
		t.Errorf("a refused restore left %v in the directory, want only notes.txt", got)
	}
}

// A process that dies as it creates a new data file leaves it empty or
// with part of its header; open removes it. check reports no damage for it
// and --repair copies every key, rather than failing on that file.
func TestCheckAndRepairWithANewestFileWithoutItsHeader(t *testing.T) {
	for _, partial := range []string{"", "\x00caskade"} {
		t.Run(fmt.Sprintf("%d bytes", len(partial)), func(t *testing.T) {
			dir := t.TempDir()
			db := openDB(t, dir, &caskade.Options{Sync: caskade.SyncNone, MergeInterval: -1})
			want := map[string]entry{"a": {val: "1", flags: 3}, "b": {val: "2"}}
			write(t, db, want)
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			names, _ := filepath.Glob(filepath.Join(dir, "*.data"))
			newest := filepath.Join(dir, fmt.Sprintf("%010d.data", len(names)+1))
			if err := os.WriteFile(newest, []byte(partial), 0o644); err != nil {
				t.Fatal(err)
			}
			repair := filepath.Join(t.TempDir(), "repaired")
			r := run(t, nil, nil, "check", dir, "--repair", repair)
			if r.err != nil || strings.Contains(r.stdout, "damaged:") {
				t.Fatalf("check --repair with a newest file of %d bytes: %v\n%s", len(partial), r.err, r.stdout)
			}
			sameContents(t, "repaired", contents(t, repair), want)
			// The other files are damage: each had its header synced
			// before a later file was made.
			older := filepath.Join(dir, "0000000000.data")
			if err := os.WriteFile(older, []byte(partial), 0o644); err != nil {
				t.Fatal(err)
			}
			if r := run(t, nil, nil, "check", dir); r.err == nil || !strings.Contains(r.stdout, "damaged: "+older+" offset 0 ") {
				t.Errorf("check with an older file of %d bytes: %v\n%s", len(partial), r.err, r.stdout)
			}
		})
	}
}

// On a terminal, a log record written while a progress bar is drawn starts
// a line of its own: the bar is cleared first, not continued by the record.
func TestLogRecordsDoNotContinueTheProgressBar(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir, &caskade.Options{Sync: caskade.SyncNone, MergeInterval: -1})
	write(t, db, map[string]entry{"a": {val: "1"}, "b": {val: "2"}})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// A hint file that open ignores, with a warning, during the repair.
	hint := filepath.Join(dir, "0000000001.hint")
	if err := os.Truncate(hint, 20); err != nil {
		t.Fatal(err)
	}
	r := run(t, &hooks{progress: true}, nil, "check", dir, "--repair", filepath.Join(t.TempDir(), "repaired"))
	if r.err != nil {
		t.Fatal(r.err)
	}
	logs := 0
	for i := 0; ; {
		j := strings.Index(r.stderr[i:], "time=")
		if j < 0 {
			break
		}
		at := i + j
		if at > 0 && r.stderr[at-1] != '\n' && r.stderr[at-1] != '\r' {
			t.Errorf("a log record continues the line before it: %q", r.stderr[max(0, at-30):at+20])
		}
		logs++
		i = at + 1
	}
	if logs == 0 {
		t.Fatalf("no log record on stderr: %q", r.stderr)
	}
}

// The end frame ends a dump: a load of two dumps run together, or of a
// dump with anything after it, fails instead of dropping the rest unseen.
func TestLoadRefusesDataAfterTheEndFrame(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir, &caskade.Options{Sync: caskade.SyncNone})
	write(t, db, map[string]entry{"a": {val: "1"}})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	dump := mustRun(t, "dump", dir).stdout
	for _, tail := range []string{dump, "\n", "dumped x to y: 1 pair\n"} {
		into := filepath.Join(t.TempDir(), "loaded")
		r := run(t, nil, strings.NewReader(dump+tail), "load", into)
		want := fmt.Sprintf("data after the end frame at byte %d", len(dump))
		if r.err == nil || !errors.Is(r.err, caskade.ErrBadDump) || !strings.Contains(r.err.Error(), want) {
			t.Errorf("load of a dump followed by %q: %v, want an error saying %q", tail[:min(len(tail), 20)], r.err, want)
		}
	}
}

// A backup directory that holds a data file its manifest does not list (the
// manifest lost an entry, or the backup was written to after it was taken)
// is refused: restoring the listed files alone would drop that file's
// records without a word. A hint file it does not list is harmless.
func TestRestoreRefusesADataFileTheManifestDoesNotList(t *testing.T) {
	src := t.TempDir()
	db := openDB(t, src, &caskade.Options{Sync: caskade.SyncNone, MaxFileSize: 4 << 10, MergeInterval: -1})
	want := sample(100)
	delete(want, "big")
	write(t, db, want)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(t.TempDir(), "backup")
	mustRun(t, "backup", src, backup)
	manifest := filepath.Join(backup, caskade.ManifestName)
	orig, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	// Drop the entry of the second data file from the manifest.
	re := regexp.MustCompile(`(?s)\{\s*"name": "0000000002\.data".*?\},?`)
	if !re.Match(orig) {
		t.Fatalf("manifest does not list 0000000002.data:\n%s", orig)
	}
	if err := os.WriteFile(manifest, re.ReplaceAll(orig, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	into := filepath.Join(t.TempDir(), "restored")
	r := run(t, nil, nil, "restore", backup, into)
	if r.err == nil || !errors.Is(r.err, caskade.ErrCorrupt) || !strings.Contains(r.err.Error(), "0000000002.data") {
		t.Errorf("restore of a backup whose manifest lost a data file: %v, want ErrCorrupt naming it", r.err)
	}
	// The same for a hint file is no reason to refuse.
	re = regexp.MustCompile(`(?s)\{\s*"name": "0000000002\.hint".*?\},?`)
	if err := os.WriteFile(manifest, re.ReplaceAll(orig, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "restore", backup, into)
	sameContents(t, "restored", contents(t, into), want)
}

// Damage in the last record of the newest data file is a torn write only
// if the file may have been cut by a crash: a file of the size its valid
// hint file records was sealed and synced whole, and open reads the hint
// file rather than cutting anything, so check reports the damage.
func TestCheckFindsDamageAtTheEndOfASealedNewestFile(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir, &caskade.Options{Sync: caskade.SyncNone, MergeInterval: -1})
	write(t, db, map[string]entry{"a": {val: "1"}, "b": {val: "2"}})
	write(t, db, map[string]entry{"last": {val: "the last value"}}) // the file's last record
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "0000000001.data")
	if _, err := os.Stat(filepath.Join(dir, "0000000001.hint")); err != nil {
		t.Fatalf("no hint file for %s: %v", data, err)
	}
	flipAfter(t, data, "the last value", 3)
	r := run(t, nil, nil, "check", dir)
	if r.err == nil || !errors.Is(r.err, caskade.ErrCorrupt) || !strings.Contains(r.stdout, "damaged: "+data+" offset ") {
		t.Errorf("check of a sealed newest file damaged at its end: %v, want damage\n%s", r.err, r.stdout)
	}
	if strings.Contains(r.stdout, "torn tail") {
		t.Errorf("check calls the damage a torn tail:\n%s", r.stdout)
	}
	// Without its hint file the file may have been cut by a crash: the
	// same bytes are a torn tail that open cuts off.
	if err := os.Remove(filepath.Join(dir, "0000000001.hint")); err != nil {
		t.Fatal(err)
	}
	if r := run(t, nil, nil, "check", dir); r.err != nil || !strings.Contains(r.stdout, "torn tail: ") {
		t.Errorf("check of a newest file without a hint file, damaged at its end: %v, want a torn tail\n%s", r.err, r.stdout)
	}
}

// blockedIO is a reader and writer whose every call blocks until the test
// ends, as a pipe whose other end neither writes nor reads does. started is
// closed at the first call.
type blockedIO struct {
	started chan struct{}
	once    sync.Once
	release chan struct{}
}

func (b *blockedIO) block() {
	b.once.Do(func() { close(b.started) })
	<-b.release
}

func (b *blockedIO) Read(p []byte) (int, error)  { b.block(); return 0, io.EOF }
func (b *blockedIO) Write(p []byte) (int, error) { b.block(); return 0, io.ErrClosedPipe }

// SIGINT and SIGTERM (which end the command's context) stop a load that
// waits for input and a dump that waits for its output to be read.
func TestLoadAndDumpStopWhenBlockedOnAPipe(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir, &caskade.Options{Sync: caskade.SyncNone})
	write(t, db, map[string]entry{"a": {val: "1"}})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	dump := mustRun(t, "dump", dir).stdout
	for _, args := range [][]string{{"load", filepath.Join(t.TempDir(), "loaded")}, {"dump", dir}} {
		t.Run(args[0], func(t *testing.T) {
			b := &blockedIO{started: make(chan struct{}), release: make(chan struct{})}
			defer close(b.release)
			root := newRootCmd(nil)
			var errb bytes.Buffer
			root.SetErr(&errb)
			// A load blocks after the header and the first pair, where a
			// failed read is not a cut stream.
			root.SetIn(io.MultiReader(strings.NewReader(dump[:len(dump)-8]), b))
			root.SetOut(b)
			root.SetArgs(args)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- root.ExecuteContext(ctx) }()
			select {
			case <-b.started:
			case err := <-done:
				t.Fatalf("caskade %s ended before it blocked: %v", args[0], err)
			}
			cancel() // as SIGINT does
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) || errors.Is(err, caskade.ErrBadDump) {
					t.Errorf("caskade %s stopped with %v, want context.Canceled (and no bad dump)", args[0], err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("caskade %s still blocked 10s after its context ended", args[0])
			}
		})
	}
}

// A manifest restore cannot read says why in words, not "<nil>".
func TestRestoreOfAnUnreadableManifestSaysWhy(t *testing.T) {
	backup := backupOf(t, map[string]entry{"k": {val: "v"}})
	manifest := filepath.Join(backup, caskade.ManifestName)
	orig, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ manifest, want string }{
		{strings.Replace(string(orig), `"format": 1`, `"format": 2`, 1), "manifest format 2, want 1"},
		{"{", "unreadable manifest: unexpected end of JSON input"},
	} {
		if err := os.WriteFile(manifest, []byte(c.manifest), 0o644); err != nil {
			t.Fatal(err)
		}
		r := run(t, nil, nil, "restore", backup, filepath.Join(t.TempDir(), "restored"))
		if r.err == nil || !errors.Is(r.err, caskade.ErrCorrupt) || !strings.HasSuffix(r.err.Error(), c.want) {
			t.Errorf("restore with a manifest of %.20q: %v, want ErrCorrupt ending %q", c.manifest, r.err, c.want)
		}
	}
}

// load makes a database in a new or empty directory, or loads into one,
// but refuses a mistyped path to a directory of other files rather than
// writing a lock file and data files among them.
func TestLoadRefusesADirectoryOfOtherFiles(t *testing.T) {
	src := t.TempDir()
	db := openDB(t, src, &caskade.Options{Sync: caskade.SyncNone})
	want := map[string]entry{"k": {val: "v"}}
	write(t, db, want)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	dump := mustRun(t, "dump", src).stdout
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, nil, strings.NewReader(dump), "load", other)
	if r.err == nil || !strings.Contains(r.err.Error(), "holds no caskade database") {
		t.Errorf("load into a directory of other files: %v, want a refusal", r.err)
	}
	if names, _ := os.ReadDir(other); len(names) != 1 {
		t.Errorf("a refused load left %d files in the directory, want only notes.txt", len(names))
	}
	for _, dir := range []string{t.TempDir(), filepath.Join(t.TempDir(), "new"), src} {
		if r := run(t, nil, strings.NewReader(dump), "load", dir); r.err != nil {
			t.Errorf("load into %s: %v", dir, r.err)
			continue
		}
		sameContents(t, "loaded", contents(t, dir), want)
	}
}

// dump -o through a symbolic link (-o latest.dump, -o /dev/stdout into a
// file) writes the file the link points to and leaves the link in place,
// rather than renaming the dump over the link.
func TestDumpThroughASymlink(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir, &caskade.Options{Sync: caskade.SyncNone})
	want := map[string]entry{"k": {val: "v", flags: 5}}
	write(t, db, want)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	real := filepath.Join(out, "real.dump")
	link := filepath.Join(out, "latest.dump")
	if err := os.WriteFile(real, []byte("an older dump"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real.dump", link); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "dump", dir, "-o", link)
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("after dump -o %s it is %v (%v), want the symbolic link it was", link, fi.Mode(), err)
	}
	b, err := os.ReadFile(real)
	if err != nil {
		t.Fatal(err)
	}
	loadsAs(t, "the file the link points to", b, want)
	if leftovers, _ := filepath.Glob(filepath.Join(out, ".*")); len(leftovers) != 0 {
		t.Errorf("dump left temporary files: %v", leftovers)
	}
}

// newTestMaint is a maint that shows its progress bars into errw, as on a
// terminal, and writes its summaries into out.
func newTestMaint(out, errw io.Writer) *maint {
	return &maint{log: slog.New(slog.DiscardHandler), out: out, errw: errw, show: true}
}

// On a terminal, backup, restore and check draw a byte bar: its length is
// the bytes of the files they handle, and they move it to the end.
func TestBackupRestoreAndCheckShowByteBars(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir, &caskade.Options{Sync: caskade.SyncNone, MaxFileSize: 32 << 10, MergeInterval: -1})
	write(t, db, sample(500))
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	bar := func(what string, m *maint, errw *bytes.Buffer, want int64) {
		t.Helper()
		pb := m.bar.Load()
		if !pb.visible() || !pb.known {
			t.Fatalf("%s: no byte bar (a spinner?): stderr %q", what, errw.String())
		}
		if max := pb.bar.GetMax64(); max != want || pb.at != want {
			t.Errorf("%s: bar at %d of %d, want %d of %d", what, pb.at, max, want, want)
		}
		if !progressChars.MatchString(errw.String()) {
			t.Errorf("%s: nothing drawn: %q", what, errw.String())
		}
	}

	var out, errw bytes.Buffer
	backup := filepath.Join(t.TempDir(), "backup")
	opts := &caskade.BackupOptions{}
	m := newTestMaint(&out, &errw)
	if err := runBackup(ctx, m, dir, backup, opts); err != nil {
		t.Fatal(err)
	}
	if opts.Progress != nil {
		t.Error("runBackup changed the options it was given")
	}
	var files int64
	names, _ := filepath.Glob(filepath.Join(backup, "*.*"))
	for _, n := range names {
		if filepath.Base(n) == caskade.ManifestName {
			continue
		}
		fi, err := os.Stat(n)
		if err != nil {
			t.Fatal(err)
		}
		files += fi.Size()
	}
	if !strings.Contains(out.String(), fmt.Sprintf(", %d bytes", files)) {
		t.Fatalf("backup summary %q does not say %d bytes", out.String(), files)
	}
	bar("backup", m, &errw, files)

	errw.Reset()
	restored := filepath.Join(t.TempDir(), "restored")
	m = newTestMaint(&out, &errw)
	if err := runRestore(ctx, m, backup, restored, &caskade.RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	bar("restore", m, &errw, files)

	errw.Reset()
	m = newTestMaint(&out, &errw)
	if err := runCheck(ctx, m, restored, ""); err != nil {
		t.Fatal(err)
	}
	bar("check", m, &errw, dataBytes(t, restored))
}

// check --repair holds DIR's lock from the check to the end of the repair:
// a database opened for writing in between (a server started) would make
// the repair copy another state than the one checked.
func TestCheckRepairHoldsTheLockThroughout(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir, &caskade.Options{Sync: caskade.SyncNone, MergeInterval: -1})
	write(t, db, map[string]entry{"a": {val: "1"}, "b": {val: "2"}})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	var openErr error
	h := &hooks{afterCheck: func() {
		db, err := caskade.Open(dir, &caskade.Options{MergeInterval: -1, ExpiryPeriod: -1})
		if err == nil {
			db.Set([]byte("a"), []byte("changed between check and repair"))
			db.Close()
		}
		openErr = err
	}}
	repaired := filepath.Join(t.TempDir(), "repaired")
	r := run(t, h, nil, "check", dir, "--repair", repaired)
	if r.err != nil {
		t.Fatalf("check --repair: %v\n%s", r.err, r.stderr)
	}
	if !errors.Is(openErr, caskade.ErrLocked) {
		t.Errorf("open for writing between the check and the repair: %v, want ErrLocked", openErr)
	}
	sameContents(t, "repaired copy", contents(t, repaired), map[string]entry{"a": {val: "1"}, "b": {val: "2"}})
}

// Merge and load refuse a backup directory: they would write new data
// files into it and retire the ones its manifest lists, and restore would
// then refuse the backup. It stays restorable.
func TestMergeAndLoadRefuseABackup(t *testing.T) {
	want := map[string]entry{"k": {val: "v"}, "j": {val: "w", flags: 3}}
	backup := backupOf(t, want)
	dump := filepath.Join(t.TempDir(), "dump")
	src := t.TempDir()
	db := openDB(t, src, &caskade.Options{Sync: caskade.SyncNone})
	write(t, db, map[string]entry{"x": {val: "y"}})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "dump", src, "-o", dump)
	for _, args := range [][]string{
		{"merge", "--force", backup},
		{"load", backup, "-i", dump},
	} {
		r := run(t, nil, nil, args...)
		if want := backup + " is a backup"; r.err == nil || !strings.HasPrefix(r.err.Error(), want) {
			t.Errorf("caskade %s: %v, want an error starting %q", strings.Join(args, " "), r.err, want)
		}
	}
	into := filepath.Join(t.TempDir(), "restored")
	mustRun(t, "restore", backup, into)
	sameContents(t, "restored after the refused merge and load", contents(t, into), want)
}

// A dump written into the database directory could replace one of its
// data files (-o DIR/0000000001.data), destroying the data it dumps, so
// dump refuses any output there, through a symbolic link too.
func TestDumpRefusesTheDatabaseDirectory(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir, &caskade.Options{Sync: caskade.SyncNone})
	want := map[string]entry{"k": {val: "v"}}
	write(t, db, want)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "to-data")
	if err := os.Symlink(filepath.Join(dir, "0000000001.data"), link); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{filepath.Join(dir, "0000000001.data"), filepath.Join(dir, "x.dump"), link} {
		r := run(t, nil, nil, "dump", dir, "-o", out)
		if r.err == nil || !strings.Contains(r.err.Error(), "is in the database directory") {
			t.Errorf("dump -o %s: %v, want a refusal", out, r.err)
		}
	}
	sameContents(t, "after the refused dumps", contents(t, dir), want)
}

// What check says about a hint file is what open does with it: an intact
// hint file of a damaged data file is not bad (open reads it, and the
// damage is reported; removing it would make open scan the damaged file
// instead), and a damaged hint file is one that open ignores.
func TestCheckSaysWhatOpenDoesWithAHintFile(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir, &caskade.Options{Sync: caskade.SyncNone, MergeInterval: -1})
	write(t, db, map[string]entry{"a": {val: "the first value"}, "b": {val: "2"}})
	write(t, db, map[string]entry{"c": {val: "3"}})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	data, hint := filepath.Join(dir, "0000000001.data"), filepath.Join(dir, "0000000001.hint")
	if _, err := os.Stat(hint); err != nil {
		t.Fatalf("no hint file for %s: %v", data, err)
	}
	b, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	at := int64(bytes.Index(b, []byte("the first value")))
	flipByte(t, data, at)
	r := run(t, nil, nil, "check", dir)
	if r.err == nil || !strings.Contains(r.stdout, "damaged: "+data+" offset ") {
		t.Errorf("check of a damaged data file: %v, want damage\n%s", r.err, r.stdout)
	}
	if strings.Contains(r.stdout, "bad hint file: ") || !strings.Contains(r.stdout, ", 0 bad hint files, ") {
		t.Errorf("check calls the intact hint file of a damaged data file bad:\n%s", r.stdout)
	}

	flipByte(t, data, at) // undo
	hb, err := os.ReadFile(hint)
	if err != nil {
		t.Fatal(err)
	}
	flipByte(t, hint, int64(len(hb)/2))
	r = run(t, nil, nil, "check", dir)
	want := "bad hint file: " + hint + " (damaged, or made for another size of its data file: open ignores it and scans the data file)\n"
	if r.err != nil || !strings.Contains(r.stdout, want) {
		t.Errorf("check of a damaged hint file: %v, want %q in\n%s", r.err, want, r.stdout)
	}

	// An intact hint file that describes other records is one that open
	// trusts.
	var hints []record.Hint
	for c := segment.NewHintCursor(hb); c.Valid(); c.Next() {
		hints = append(hints, *c.Hint())
	}
	hints[0].Expiry = 12345
	if err := os.WriteFile(hint, segment.BuildHints(hints, int64(len(b))), 0o644); err != nil {
		t.Fatal(err)
	}
	r = run(t, nil, nil, "check", dir)
	want = "bad hint file: " + hint + " (intact, but it does not describe the records of its data file, and open trusts it: remove it, and the next open scans the data file instead)\n"
	if r.err != nil || !strings.Contains(r.stdout, want) {
		t.Errorf("check of a hint file of other records: %v, want %q in\n%s", r.err, want, r.stdout)
	}
}
