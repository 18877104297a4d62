// Command caskade is the caskade database server and tool.
//
//	caskade serve [flags]                    serve the database (Redis, memcached and HTTP protocols)
//	caskade merge DIR [--force]              compact the database in DIR (if anything in it is dead)
//	caskade backup DIR DEST [--link]         write a verified copy of DIR to DEST
//	caskade restore BACKUP DIR [--force]     verify a backup and install it as DIR
//	caskade check DIR [--repair DEST]        verify every record and hint file; write a salvaged copy
//	caskade dump DIR [-o FILE]               export every live pair as a dump stream
//	caskade load DIR [-i FILE]               import a dump stream in large batches, one final sync
//	caskade version                          print the version
//
// The maintenance commands (merge, backup, restore, check, dump, load) work
// on a directory that no server holds: they refuse one a running caskade
// has open (a running server takes backups itself, with SAVE and BGSAVE).
// They take every path from their arguments, print a summary on standard
// output (a dump to standard output logs it with --verbose instead), show a progress bar on standard error when it is a terminal
// (nothing otherwise), log warnings to standard error (info too with
// --verbose), and on failure print a one-line reason and exit with status 1;
// check also exits with status 1 when it finds damage.
//
// Every flag of serve can also be set through the environment, as
// CASKADE_<FLAG> in upper case with dashes turned into underscores
// (CASKADE_REDIS_ADDR for --redis-addr), and in the file named by --config
// (or CASKADE_CONFIG). A flag given on the command line wins over the
// environment, which wins over the file.
//
// The config file has one setting per line, "name value", as in
// redis.conf: the name is a flag name without the dashes, the value is the
// rest of the line (surrounding blanks removed). A boolean is true or
// false, or yes or no, there and in the environment. Blank lines and lines
// starting with # are ignored.
//
// A value may be wrapped in quotes, as in redis.conf, to keep blanks at
// its ends or to give an empty value (redis-addr ""); the quotes are not
// part of the value. In double quotes, \n, \r, \t, \b, \a and \xHH (two hex
// digits) are escapes, and a backslash before any other character stands
// for that character, so \" is a double quote and \\ a backslash. In single
// quotes everything is literal except \', a single quote. Nothing but
// blanks may follow the closing quote, and an unclosed quote is an error.
// A value that does not begin with a quote is taken as written, quotes
// and backslashes inside it included. For example:
//
//	# caskade.conf
//	dir /var/lib/caskade
//	sync always
//	redis-addr 0.0.0.0:6379
//	requirepass "correct horse battery staple"
//	redis-socket '/run/caskade/redis.sock'
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCmd(nil).ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "caskade:", err)
		os.Exit(1)
	}
}
