// Command caskade is the caskade database server and tool.
//
//	caskade serve [flags]   serve the database over the Redis protocol
//	caskade version         print the version
//
// Every flag of serve can also be set through the environment, as
// CASKADE_<FLAG> in upper case with dashes turned into underscores
// (CASKADE_REDIS_ADDR for --redis-addr), and in the file named by --config
// (or CASKADE_CONFIG). A flag given on the command line wins over the
// environment, which wins over the file.
//
// The config file has one setting per line, "name value", as in
// redis.conf: the name is a flag name without the dashes, the value is the
// rest of the line (surrounding blanks removed; wrap it in double quotes to
// keep blanks or to give an empty value, as in redis-addr ""). Blank lines
// and lines starting with # are ignored. For example:
//
//	# caskade.conf
//	dir /var/lib/caskade
//	sync always
//	redis-addr 0.0.0.0:6379
//	requirepass "correct horse battery staple"
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
