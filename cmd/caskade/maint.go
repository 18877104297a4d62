package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/caskade/caskade"
	"github.com/caskade/caskade/internal/pario"
	"github.com/spf13/cobra"
)

// addMaintenanceCmds adds the commands that work on a database directory
// that no server holds: merge, backup, restore, check, dump and load.
func addMaintenanceCmds(root *cobra.Command, h *hooks) {
	for _, c := range []*cobra.Command{newMergeCmd(h), newBackupCmd(h), newRestoreCmd(h),
		newCheckCmd(h), newDumpCmd(h), newLoadCmd(h)} {
		c.Long = strings.TrimSpace(c.Long)
		root.AddCommand(c)
	}
}

// cliError is an error whose message is the command's one-line reason; it
// wraps the cause, so errors.Is and errors.As still see it.
type cliError struct {
	msg string
	err error
}

func (e *cliError) Error() string { return e.msg }
func (e *cliError) Unwrap() error { return e.err }

// reason returns err's message without the "caskade: " prefixes of its
// wrapped errors ("caskade: merge: caskade: corrupt ..."): main prints one.
func reason(err error) string {
	return strings.ReplaceAll(err.Error(), "caskade: ", "")
}

// wrapf returns "what: cause" as a one-line error wrapping err, where an
// error that says a directory is locked becomes the "in use" reason.
func wrapf(err error, dir, format string, args ...any) error {
	if errors.Is(err, caskade.ErrLocked) {
		return inUse(dir, err)
	}
	return &cliError{msg: fmt.Sprintf(format, args...) + ": " + reason(err), err: err}
}

// openErr is the error for a failed caskade.Open of dir.
func openErr(err error, dir string) error {
	if errors.Is(err, caskade.ErrCorrupt) {
		return &cliError{msg: fmt.Sprintf("open %s: %s (caskade check %s shows the damage; --repair DEST writes a salvaged copy)",
			dir, reason(err), dir), err: err}
	}
	if errors.Is(err, syscall.ENOTDIR) {
		// "create DIR: mkdir DIR: not a directory" says less.
		return &cliError{msg: fmt.Sprintf("open %s: %s is not a directory", dir, notDirPath(dir)), err: err}
	}
	return wrapf(err, dir, "open %s", dir)
}

// notDirPath returns the part of path that exists and is not a directory
// (path itself, or one of its parents).
func notDirPath(path string) string {
	for p := path; ; p = filepath.Dir(p) {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
		if filepath.Dir(p) == p {
			return path
		}
	}
}

// inUse is the error for a directory whose lock another process holds.
func inUse(dir string, err error) error {
	return &cliError{msg: fmt.Sprintf("%s is in use by a running caskade (or another process)", dir), err: err}
}

// requireDir fails unless dir is an existing directory.
func requireDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &cliError{msg: fmt.Sprintf("%s: no such directory", dir), err: err}
	case err != nil:
		return &cliError{msg: err.Error(), err: err}
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	}
	return nil
}

// requireDatabase fails unless dir is an existing directory that holds a
// caskade database (or a backup of one): a lock file, a manifest or a data
// or hint file. A mistyped path to another directory would otherwise be
// checked as an empty database with "no damage", or get a lock file.
func requireDatabase(dir string) error {
	if err := requireDir(dir); err != nil {
		return err
	}
	for _, pattern := range []string{caskade.LockFileName, caskade.ManifestName, "*.data", "*.hint"} {
		if m, _ := filepath.Glob(filepath.Join(globEscape(dir), pattern)); len(m) > 0 {
			return nil
		}
	}
	return fmt.Errorf("%s holds no caskade database (no lock, data or hint file)", dir)
}

// refuseBackup fails if dir is a backup (it holds a manifest): a command
// that writes to it (merge, load) would add data files its manifest does
// not list and retire ones it does, and restore would then refuse the
// backup. what is the command, for the reason.
func refuseBackup(dir, what string) error {
	if _, err := os.Stat(filepath.Join(dir, caskade.ManifestName)); err != nil {
		return nil
	}
	return fmt.Errorf("%s is a backup (it holds %s): %s would change the files its manifest lists and restore would refuse it; restore it into a directory of its own first (caskade restore %s DIR), or remove its %s to make it a plain database",
		dir, caskade.ManifestName, what, dir, caskade.ManifestName)
}

// globEscape quotes the pattern characters of a path for filepath.Glob.
func globEscape(path string) string {
	var b strings.Builder
	for _, r := range path {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// maint is what every maintenance command shares: its log, its outputs
// and whether it shows progress bars.
type maint struct {
	log  *slog.Logger
	out  io.Writer // the summary
	errw io.Writer // progress bars
	show bool
	now  func() time.Time // the clock for expiry (nil: time.Now)
	bar  atomic.Pointer[progress]
	// afterCheck, if set, is called by check --repair between the check
	// and the repair (tests).
	afterCheck func()
}

func newMaint(cmd *cobra.Command, h *hooks, verbose bool) *maint {
	errw := cmd.ErrOrStderr()
	logOut := h.logOut
	if logOut == nil {
		logOut = errw
	}
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelInfo
	}
	m := &maint{
		out:        cmd.OutOrStdout(),
		errw:       errw,
		show:       h.progress || isTerminal(errw),
		now:        h.now,
		afterCheck: h.afterCheck,
	}
	if m.show && logOut == errw {
		logOut = &barWriter{m: m, w: logOut}
	}
	m.log = slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: level}))
	return m
}

// barWriter writes log records to the terminal that shows the progress
// bar: it clears the bar first, so that a record starts a line of its own
// rather than continuing the bar's, and draws the bar again after it.
type barWriter struct {
	m *maint
	w io.Writer
}

func (b *barWriter) Write(p []byte) (int, error) {
	pb := b.m.bar.Load()
	if !pb.visible() {
		return b.w.Write(p)
	}
	pb.mu.Lock()
	defer pb.mu.Unlock()
	if pb.finished {
		return b.w.Write(p)
	}
	pb.bar.Clear()
	n, err := b.w.Write(p)
	pb.bar.RenderBlank()
	return n, err
}

// progress starts a progress bar (a spinner if max <= 0) on stderr if it is
// a terminal; see newProgress.
func (m *maint) progress(max int64, desc string, bytes, count bool) *progress {
	p := newProgress(m.errw, m.show, max, desc, bytes, count)
	m.bar.Store(p)
	return p
}

// byteProgress returns a Progress callback for Backup, Restore or Check
// that sizes pb by the total it is told and moves it to done, or nil if pb
// is not shown. The callback must not be called concurrently.
func byteProgress(pb *progress) func(done, total int64) {
	if !pb.visible() {
		return nil
	}
	var max int64
	return func(done, total int64) {
		if total != max {
			pb.setMax(total)
			max = total
		}
		pb.set(done)
	}
}

// dur formats a duration for a summary line.
func dur(d time.Duration) string {
	if d < time.Millisecond {
		return d.Round(time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

const lockNote = `
It refuses a directory that a running caskade server (or any other process)
has open.
`

func newMergeCmd(h *hooks) *cobra.Command {
	var verbose, force bool
	cmd := &cobra.Command{
		Use:   "merge DIR",
		Short: "Compact the database in DIR",
		Long: `Merge opens the database in DIR and compacts it: the live records of its data
files (the newest one too, if it holds dead records) are rewritten in key
order into new files with hint files, and overwritten, deleted and expired
records are dropped. It prints a one-line summary.

When no file holds an overwritten, deleted or expired record, there is
nothing to reclaim: it says so and leaves every file as it was. --force
rewrites the files anyway (in key order, which range reads then read in
file order, and into as few files as they fit). It refuses a backup (a
directory with a manifest), which restore would refuse once merged:
restore it into a directory of its own first.
` + lockNote + `
A running server merges on its own (and on BGREWRITEAOF).`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return runMerge(c.Context(), newMaint(c, h, verbose), args[0], force)
		},
	}
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "log what happens (info level) to stderr")
	cmd.Flags().BoolVar(&force, "force", false, "rewrite the data files even when nothing in them is dead")
	return cmd
}

// nothingToMerge is merge's summary when no file holds a dead record.
const nothingToMerge = "nothing to merge (no overwritten, deleted or expired records); files left as they were"

func runMerge(ctx context.Context, m *maint, dir string, force bool) error {
	if err := requireDatabase(dir); err != nil {
		return err
	}
	if err := refuseBackup(dir, "merging it"); err != nil {
		return err
	}
	db, err := caskade.Open(dir, &caskade.Options{Logger: m.log, MergeInterval: -1, ExpiryPeriod: -1, Now: m.now})
	if err != nil {
		return openErr(err, dir)
	}
	if !force && db.ReclaimableBytes() == 0 {
		// Keys that expired count too, though the file statistics count
		// them as live until they are merged (active expiry is off here).
		if err := db.Close(); err != nil {
			return wrapf(err, dir, "close %s", dir)
		}
		fmt.Fprintf(m.out, "merge %s: %s\n", dir, nothingToMerge)
		return nil
	}
	pb := m.progress(0, "merging", true, false)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	if pb.visible() {
		wg.Go(func() {
			t := time.NewTicker(100 * time.Millisecond)
			defer t.Stop()
			sized := false
			for {
				select {
				case <-stop:
					return
				case <-t.C:
				}
				mp := db.Stats().Merge
				if !mp.Running || mp.BytesTotal <= 0 {
					continue
				}
				if !sized {
					pb.setMax(mp.BytesTotal)
					sized = true
				}
				pb.set(mp.BytesDone)
			}
		})
	}
	st, err := db.Merge(ctx)
	close(stop)
	wg.Wait()
	pb.done()
	cerr := db.Close()
	if errors.Is(err, caskade.ErrCorrupt) {
		return &cliError{msg: fmt.Sprintf("merge %s: %s (caskade check %s shows the damage; --repair DEST writes a salvaged copy)",
			dir, reason(err), dir), err: err}
	}
	if err != nil {
		return wrapf(err, dir, "merge %s", dir)
	}
	if cerr != nil {
		return wrapf(cerr, dir, "close %s", dir)
	}
	if st.InputFiles == 0 {
		fmt.Fprintf(m.out, "merge %s: %s\n", dir, nothingToMerge)
		return nil
	}
	saved := 0.0
	if st.InputBytes > 0 {
		saved = 100 * float64(st.InputBytes-st.OutputBytes) / float64(st.InputBytes)
	}
	fmt.Fprintf(m.out, "merged %s: %s (%d bytes) -> %s (%d bytes, %.1f%% smaller), %s, %s\n",
		dir, plural(st.InputFiles, "input file", "input files"), st.InputBytes,
		plural(st.OutputFiles, "output file", "output files"), st.OutputBytes, saved,
		plural(st.Records, "record", "records"), dur(st.Duration))
	return nil
}

func newBackupCmd(h *hooks) *cobra.Command {
	var (
		verbose bool
		opts    caskade.BackupOptions
	)
	cmd := &cobra.Command{
		Use:   "backup DIR DEST",
		Short: "Write a verified copy of the database in DIR to DEST",
		Long: `Backup copies the database in DIR into DEST, which must not exist or be
empty, with a manifest of every file's size and checksum that restore
verifies. With --link, data and hint files are hard-linked instead of copied
where the file system allows (they are never changed in place, so a linked
backup stays consistent).
` + lockNote + `
To back up a database while a server runs, ask the server: the Redis
protocol's SAVE and BGSAVE write a consistent backup, while writes go on,
into a new directory under DIR/backups.`,
		Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			return runBackup(c.Context(), newMaint(c, h, verbose), args[0], args[1], &opts)
		},
	}
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "log what happens (info level) to stderr")
	cmd.Flags().BoolVar(&opts.Link, "link", false, "hard-link files into DEST where possible instead of copying")
	cmd.Flags().IntVar(&opts.Workers, "workers", 0, "parallel copy workers (0: one per CPU; at most 1024)")
	return cmd
}

// checkWorkers checks a --workers value against the bound of the parallel
// copy (pario.MaxWorkers), so that the message states the whole range.
func checkWorkers(n int) error {
	if n < 0 || n > pario.MaxWorkers {
		return fmt.Errorf("--workers %d: want 0 (one per CPU) to %d", n, pario.MaxWorkers)
	}
	return nil
}

func runBackup(ctx context.Context, m *maint, dir, dest string, opts *caskade.BackupOptions) error {
	if err := requireDatabase(dir); err != nil {
		return err
	}
	if err := checkWorkers(opts.Workers); err != nil {
		return err
	}
	db, err := caskade.Open(dir, &caskade.Options{ReadOnly: true, Logger: m.log})
	if err != nil {
		return openErr(err, dir)
	}
	pb := m.progress(0, "backing up", true, false)
	o := *opts
	o.Progress = byteProgress(pb)
	st, err := db.Backup(ctx, dest, &o)
	pb.done()
	cerr := db.Close()
	if err != nil {
		return wrapf(err, dest, "backup of %s into %s", dir, dest)
	}
	if cerr != nil {
		return wrapf(cerr, dir, "close %s", dir)
	}
	fmt.Fprintf(m.out, "backup of %s in %s: %s, %d bytes (%d linked), version %d, %s\n",
		dir, dest, plural(st.Files, "file", "files"), st.Bytes, st.Linked, st.Version, dur(st.Duration))
	return nil
}

func newRestoreCmd(h *hooks) *cobra.Command {
	var (
		verbose bool
		opts    caskade.RestoreOptions
	)
	cmd := &cobra.Command{
		Use:   "restore BACKUP DIR",
		Short: "Verify the backup in BACKUP and install it as the database in DIR",
		Long: `Restore verifies every file of the backup in BACKUP against its manifest
(size and checksum) and installs it as the database in DIR. Nothing is
installed unless every file verifies, nor from a backup that holds a data
file its manifest does not list. It refuses a DIR that is not empty
unless --force is given, which removes the database (or backup) already
there (files caskade does not own are left alone).
` + lockNote,
		Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			return runRestore(c.Context(), newMaint(c, h, verbose), args[0], args[1], &opts)
		},
	}
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "log what happens (info level) to stderr")
	cmd.Flags().BoolVar(&opts.Force, "force", false, "replace the database already in DIR")
	cmd.Flags().IntVar(&opts.Workers, "workers", 0, "parallel copy workers (0: one per CPU; at most 1024)")
	return cmd
}

func runRestore(ctx context.Context, m *maint, backup, dir string, opts *caskade.RestoreOptions) error {
	if err := requireDir(backup); err != nil {
		return err
	}
	if err := checkWorkers(opts.Workers); err != nil {
		return err
	}
	start := time.Now()
	m.log.Info("caskade: restoring", "backup", backup, "dir", dir, "force", opts.Force)
	pb := m.progress(0, "restoring", true, false)
	o := *opts
	o.Progress = byteProgress(pb)
	err := caskade.Restore(ctx, backup, dir, &o)
	pb.done()
	if errors.Is(err, caskade.ErrNotEmpty) {
		return &cliError{msg: fmt.Sprintf("restore: %s is not empty (--force replaces the database in it)", dir), err: err}
	}
	if err != nil {
		return wrapf(err, dir, "restore %s into %s", backup, dir)
	}
	fmt.Fprintf(m.out, "restored %s into %s: every file verified, %s\n", backup, dir, dur(time.Since(start)))
	return nil
}

func newCheckCmd(h *hooks) *cobra.Command {
	var verbose bool
	var repair string
	cmd := &cobra.Command{
		Use:   "check DIR",
		Short: "Verify every record and hint file of the database in DIR",
		Long: `Check reads every data file of the database in DIR and verifies every record's
checksum, and every hint file against its data file, without changing
anything. It prints each damaged range (file, first and end offset, reason),
the torn tail of the newest file if any (cut off by the next open; not
damage), the hint files that do not match, and a summary. It exits with
status 1 if it finds damage.

With --repair DEST it also writes a salvaged copy of the database into DEST
(a new or empty directory): every key whose record is undamaged, with its
value, expiry and flags. DIR is never changed, and it stays locked from the
check to the end of the repair, so the copy is of the state checked. A
salvage cannot know what a damaged record held: where it was a key's newer
value or its delete, the copy has the key's older value, or the deleted
key, back.
` + lockNote,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return runCheck(c.Context(), newMaint(c, h, verbose), args[0], repair)
		},
	}
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "log what happens (info level) to stderr")
	cmd.Flags().StringVar(&repair, "repair", "", "write a salvaged copy of the database into this new directory")
	return cmd
}

func runCheck(ctx context.Context, m *maint, dir, repair string) error {
	if err := requireDatabase(dir); err != nil {
		return err
	}
	if repair != "" {
		// Hold DIR's lock from the check to the end of the repair: a
		// server started in between would make the repair copy another
		// state than the one checked.
		lock, err := caskade.HoldReadOnly(dir, nil)
		if err != nil {
			return wrapf(err, dir, "check %s", dir)
		}
		defer lock.Close()
	}
	pb := m.progress(0, "checking", true, false)
	rep, err := caskade.Check(ctx, dir, &caskade.CheckOptions{Progress: byteProgress(pb)})
	pb.done()
	if err != nil {
		return wrapf(err, dir, "check %s", dir)
	}
	for _, d := range rep.Damage {
		fmt.Fprintf(m.out, "damaged: %s offset %d end %d (%d bytes): %s\n",
			d.Path, d.Offset, d.End, d.End-d.Offset, reason(d.Err))
	}
	if rep.TornBytes > 0 {
		fmt.Fprintf(m.out, "torn tail: %d bytes at the end of the newest data file (an unfinished write, or space allocated ahead of appends, that the next open cuts off; not damage)\n", rep.TornBytes)
	}
	for _, p := range rep.BadHints {
		if slices.Contains(rep.TrustedBadHints, p) {
			fmt.Fprintf(m.out, "bad hint file: %s (intact, but it does not describe the records of its data file, and open trusts it: remove it, and the next open scans the data file instead)\n", p)
		} else {
			fmt.Fprintf(m.out, "bad hint file: %s (damaged, or made for another size of its data file: open ignores it and scans the data file)\n", p)
		}
	}
	found := "no damage"
	if !rep.OK() {
		found = plural(len(rep.Damage), "damaged range", "damaged ranges")
	}
	fmt.Fprintf(m.out, "checked %s: %s, %s, %d bytes, %s, %s\n", dir,
		plural(rep.Files, "data file", "data files"), plural(rep.Records, "record", "records"),
		rep.Bytes, plural(len(rep.BadHints), "bad hint file", "bad hint files"), found)
	if repair != "" {
		if m.afterCheck != nil {
			m.afterCheck()
		}
		pb := m.progress(0, "repairing", false, false)
		n, err := caskade.Repair(ctx, dir, repair, &caskade.Options{Logger: m.log})
		pb.done()
		if err != nil {
			if errors.Is(err, caskade.ErrLocked) {
				return inUse(dir, err)
			}
			return wrapf(err, repair, "repair %s into %s", dir, repair)
		}
		fmt.Fprintf(m.out, "repaired copy of %s in %s: %s kept\n", dir, repair, plural(n, "key", "keys"))
	}
	if !rep.OK() {
		return &cliError{msg: fmt.Sprintf("%s in %s", found, dir), err: caskade.ErrCorrupt}
	}
	return nil
}

func newDumpCmd(h *hooks) *cobra.Command {
	var verbose bool
	var output string
	cmd := &cobra.Command{
		Use:   "dump DIR",
		Short: "Export every live pair of the database in DIR as a dump stream",
		Long: `Dump writes every live key of the database in DIR, in key order, with its
value, expiry and flags, as a caskade dump stream: a header line
"caskade-dump 1", then one CRC-checked frame per pair, then an end frame
with the pair count (the format is in "go doc github.com/caskade/caskade
DB.Dump"). Load reads it.

It writes to standard output (never to a terminal; also with -o -), or
with -o to FILE, which appears only once the dump is complete, with mode
0600 as it holds every value (a device or named pipe, such as /dev/null, is
written to as it is), but never into DIR itself, whose files it could
replace. It opens DIR read-only.
` + lockNote,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return runDump(c.Context(), newMaint(c, h, verbose), c.OutOrStdout(), args[0], output)
		},
	}
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "log what happens (info level) to stderr")
	cmd.Flags().StringVarP(&output, "output", "o", "", "write the dump to this file instead of standard output")
	return cmd
}

func runDump(ctx context.Context, m *maint, stdout io.Writer, dir, output string) (err error) {
	if err := requireDatabase(dir); err != nil {
		return err
	}
	if output == "-" {
		output = "" // standard output, as the convention goes
	}
	if output == "" && isTerminal(stdout) {
		return errors.New("dump: refusing to write a binary dump to a terminal (use -o FILE or redirect standard output)")
	}
	special := false // output is a device, pipe or socket: written as it is
	target := output // the file written: output, or what it links to
	if output != "" {
		// A temporary file renamed over a symbolic link (-o latest.dump,
		// -o /dev/stdout) would replace the link: write where it points.
		if fi, err := os.Lstat(output); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			if t, err := filepath.EvalSymlinks(output); err == nil {
				target = t
			}
		}
		// Found now rather than by the rename at the end of the dump.
		fi, err := os.Stat(target)
		if err == nil && fi.IsDir() {
			return fmt.Errorf("dump: -o %s is a directory (give a file name)", output)
		}
		// A temporary file renamed over /dev/null, /dev/stdout or a named
		// pipe would replace it with a regular file.
		special = err == nil && !fi.Mode().IsRegular()
		if err := requireDir(filepath.Dir(target)); err != nil && !special {
			return fmt.Errorf("dump: -o %s: %w", output, err)
		}
		// Renamed into the database directory, the dump could replace one
		// of the files it reads (-o DIR/0000000001.data), destroying them.
		if into, err := os.Stat(filepath.Dir(target)); err == nil && !special {
			if db, err := os.Stat(dir); err == nil && os.SameFile(into, db) {
				return fmt.Errorf("dump: -o %s is in the database directory %s, whose files it could replace: write it elsewhere", output, dir)
			}
		}
	}
	db, err := caskade.Open(dir, &caskade.Options{ReadOnly: true, Logger: m.log})
	if err != nil {
		return openErr(err, dir)
	}
	defer func() {
		if cerr := db.Close(); cerr != nil && err == nil {
			err = wrapf(cerr, dir, "close %s", dir)
		}
	}()
	w := stdout
	var tmp *os.File
	if special {
		f, err := os.OpenFile(target, os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("dump: %w", err)
		}
		defer func() {
			if cerr := f.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("dump: %w", cerr)
			}
		}()
		if isTerminal(f) {
			return fmt.Errorf("dump: refusing to write a binary dump to the terminal %s", output)
		}
		w = f
	} else if output != "" {
		tmp, err = os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".tmp-*")
		if err != nil {
			return fmt.Errorf("dump: %w", err)
		}
		defer func() {
			if tmp != nil {
				tmp.Close()
				os.Remove(tmp.Name())
			}
		}()
		w = tmp
	}
	if tmp == nil {
		// A pipe or device may block a write for as long as its reader
		// likes: SIGINT and SIGTERM still stop the dump.
		w = newCtxWriter(ctx, w)
	}
	pb := m.progress(int64(db.Stats().Keys), "dumping", false, true)
	if pb.visible() {
		w = &pairCounter{w: w, onPairs: pb.set}
	}
	st, err := db.Dump(ctx, w)
	pb.done()
	if err != nil {
		return wrapf(err, dir, "dump %s", dir)
	}
	if tmp != nil {
		if err := tmp.Sync(); err != nil {
			return fmt.Errorf("dump: %w", err)
		}
		if err := tmp.Close(); err != nil {
			return fmt.Errorf("dump: %w", err)
		}
		if err := os.Rename(tmp.Name(), target); err != nil {
			os.Remove(tmp.Name())
			tmp = nil
			return fmt.Errorf("dump: %w", err)
		}
		tmp = nil
	}
	if output != "" && !sameFile(target, stdout) {
		fmt.Fprintf(m.out, "dumped %s to %s: %s, %d bytes of keys and values, %s\n",
			dir, output, plural(st.Pairs, "pair", "pairs"), st.Bytes, dur(st.Duration))
		return nil
	}
	m.log.Info("caskade: dumped", "dir", dir, "pairs", st.Pairs, "bytes", st.Bytes, "duration", st.Duration)
	return nil
}

// sameFile reports whether path is the file w writes to (-o /dev/stdout),
// where a summary would be written into the dump.
func sameFile(path string, w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || f == nil {
		return false
	}
	a, err := os.Stat(path)
	if err != nil {
		return false
	}
	b, err := f.Stat()
	return err == nil && os.SameFile(a, b)
}

func newLoadCmd(h *hooks) *cobra.Command {
	var verbose bool
	var input string
	var batch int
	cmd := &cobra.Command{
		Use:   "load DIR",
		Short: "Import a dump stream into the database in DIR",
		Long: `Load reads a caskade dump stream (see dump) from standard input, or with -i
from FILE, and writes its pairs, with their expiries and flags, into the
database in DIR (created if DIR is missing or empty; keys already there are
overwritten).
It writes in large atomic batches without syncing each one, then syncs once
at the end. Pairs whose expiry has passed are skipped. A damaged or cut
stream (or one with anything after its end frame) stops the load with an error that gives the byte offset of the
damage; the batches before it stay, and the error says how many pairs they
hold. It refuses a backup (a directory with a manifest), which restore
would refuse once loaded into.
` + lockNote,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return runLoad(c.Context(), newMaint(c, h, verbose), c.InOrStdin(), args[0], input, batch)
		},
	}
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "log what happens (info level) to stderr")
	cmd.Flags().StringVarP(&input, "input", "i", "", "read the dump from this file instead of standard input")
	cmd.Flags().IntVar(&batch, "batch-bytes", caskade.DefaultLoadBatchBytes, "bytes of keys and values per atomic batch")
	return cmd
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func runLoad(ctx context.Context, m *maint, stdin io.Reader, dir, input string, batch int) (err error) {
	if batch <= 0 || batch > caskade.DefaultMaxBatchSize/2 {
		return fmt.Errorf("--batch-bytes %d: want 1 to %d", batch, caskade.DefaultMaxBatchSize/2)
	}
	var size int64
	r := stdin
	if input == "-" {
		input = "" // standard input
	}
	if input != "" {
		f, err := os.Open(input)
		if err != nil {
			return fmt.Errorf("load: %w", err)
		}
		defer f.Close()
		fi, err := f.Stat()
		if err == nil && fi.IsDir() {
			return fmt.Errorf("load: -i %s is a directory (give a dump file)", input)
		}
		if err == nil && fi.Mode().IsRegular() {
			size = fi.Size()
		}
		r = f
	} else if isTerminal(stdin) {
		return errors.New("load: refusing to read a dump from a terminal (use -i FILE or redirect standard input)")
	}
	fi, statErr := os.Stat(dir)
	created := os.IsNotExist(statErr)
	if statErr == nil && fi.IsDir() {
		if err := refuseBackup(dir, "loading into it"); err != nil {
			return err
		}
	}
	if statErr == nil && fi.IsDir() && requireDatabase(dir) != nil {
		// As for the other commands, a mistyped path to another directory
		// must not get a lock file and data files among its own.
		if names, err := os.ReadDir(dir); err == nil && len(names) > 0 {
			return fmt.Errorf("load: %s is not empty and holds no caskade database (load makes one only in a new or empty directory)", dir)
		}
	}
	db, err := caskade.Open(dir, &caskade.Options{Sync: caskade.SyncNone, Logger: m.log, MergeInterval: -1, Now: m.now})
	if err != nil {
		return openErr(err, dir)
	}
	cr := &countingReader{r: newCtxReader(ctx, r)}
	opts := &caskade.LoadOptions{BatchBytes: batch}
	pb := m.progress(size, "loading", size > 0, size <= 0)
	if pb.visible() {
		opts.Progress = func(st caskade.DumpStats) {
			if size > 0 {
				pb.set(cr.n.Load())
			} else {
				pb.set(int64(st.Pairs))
			}
		}
	}
	st, err := db.Load(ctx, cr, opts)
	pb.done()
	cerr := db.Close()
	if err != nil {
		if created && st.Pairs == 0 && cerr == nil {
			// Nothing was loaded into the database this load created: do
			// not leave an empty one behind for a bad input.
			os.RemoveAll(dir)
		}
		kept := "nothing loaded"
		if st.Pairs > 0 {
			kept = plural(st.Pairs, "pair", "pairs") + " loaded before the error stay"
		}
		return wrapf(err, dir, "load into %s (%s)", dir, kept)
	}
	if cerr != nil {
		return wrapf(cerr, dir, "close %s", dir)
	}
	skipped := ""
	if st.Expired > 0 {
		skipped = ", skipped " + plural(st.Expired, "expired pair", "expired pairs")
	}
	fmt.Fprintf(m.out, "loaded %s (%d bytes of keys and values) into %s%s, %s\n",
		plural(st.Pairs, "pair", "pairs"), st.Bytes, dir, skipped, dur(st.Duration))
	return nil
}
