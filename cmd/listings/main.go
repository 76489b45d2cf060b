// Command listings keeps an honest, live index of GPU rental prices: it
// collects listings from GPU marketplaces into a bbolt index and answers
// with medians, percentiles, floors and disappearing-floor flags.
//
// This package is wiring only: flags, output formats, the demo. The rules
// live in the packages it imports (see DESIGN §1).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"
	"time"
)

// version is set at build time with -ldflags "-X main.version=..."; a
// `go install` of a tagged module reports its module version instead.
var version = "dev"

func init() {
	if version != "dev" {
		return
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		version = bi.Main.Version
	}
}

const usage = `listings: an honest, live index of GPU rental prices

usage: listings [--db PATH] [--config FILE] COMMAND [flags]

commands:
  collect    collect live listings from the sources into the index
  median     price statistics of one GPU query (--gpu 4090)
  gpus       one statistics row per GPU in the market
  flags      disappearing floor listings
  history    statistics points over time
  runs       the collection runs
  check      verify the index (exit 1 on any fault)
  recommend  which GPU to rent for a job, at live medians
  cost       on-demand versus spot total cost
  export     the finance export (CSV or Parquet)
  demo       replay the bundled fixtures into a fresh index and show the results
  version    print the version

global flags:
  --db PATH       the index file (default $LISTINGS_DB, the config's db, or
                  $XDG_DATA_HOME/listings/listings.db)
  --config FILE   the TOML config (default $LISTINGS_CONFIG or
                  $XDG_CONFIG_HOME/listings/listings.toml; none is needed)

Run 'listings COMMAND -h' for a command's flags.
`

// command is one subcommand: it parses its own flags from args.
type command func(ctx context.Context, a *app, args []string) error

// commands is the table of subcommands. Each lives in its own file.
var commands = map[string]command{}

// register adds a command to the table; called from init() of each file.
func register(name string, c command) { commands[name] = c }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// app is what every command gets: its streams, the resolved settings and
// the clock.
type app struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	now            func() time.Time
	dbPath         string
	dbFlag         string // the global --db flag as given ("" when not)
	cfg            *Config
}

// exitError carries an exit code other than 1.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageErrorf is a usage error: exit 2.
func usageErrorf(format string, args ...any) error {
	return &exitError{2, fmt.Errorf(format, args...)}
}

// errSilent ends a command with exit 1 after it printed what it had to say
// (a price query none of whose rows is live).
var errSilent = errors.New("")

// run is the whole CLI; tests call it in-process.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runEnv(ctx, args, stdout, stderr, os.Getenv, time.Now)
}

func runEnv(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string, now func() time.Time) int {
	a := &app{stdout: stdout, stderr: stderr, getenv: getenv, now: now}
	fs := flag.NewFlagSet("listings", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dbFlag := fs.String("db", "", "index file")
	cfgFlag := fs.String("config", "", "config file")
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usage)
			return 0
		}
		return a.fail(usageErrorf("%v", err))
	}
	rest := fs.Args()
	if len(rest) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	name, cargs := rest[0], rest[1:]
	switch name {
	case "help":
		fmt.Fprint(stdout, usage)
		return 0
	case "version":
		fmt.Fprintf(stdout, "listings %s\n", version)
		return 0
	}
	cmd, ok := commands[name]
	if !ok {
		return a.fail(usageErrorf("unknown command %q (commands: %s)", name, strings.Join(commandNames(), ", ")))
	}
	cfg, err := loadConfig(*cfgFlag, getenv)
	if err != nil {
		return a.fail(err)
	}
	a.cfg = cfg
	a.dbPath = resolveDB(*dbFlag, getenv, cfg)
	a.dbFlag = *dbFlag
	return a.fail(cmd(ctx, a, cargs))
}

func commandNames() []string {
	var names []string
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// fail prints err as "listings: error: ..." and returns the exit code.
func (a *app) fail(err error) int {
	if err == nil {
		return 0
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	code := 1
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	if err == errSilent {
		return 1
	}
	msg := err.Error()
	if msg != "" {
		fmt.Fprintf(a.stderr, "listings: error: %s\n", msg)
	}
	return code
}

// flagSet returns a flag set for a command whose -h prints its flags to
// stdout and whose parse errors are usage errors.
func (a *app) flagSet(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(a.stderr)
	fs.Usage = func() {
		fs.SetOutput(a.stdout)
		fmt.Fprintf(a.stdout, "usage: listings %s\n", strings.TrimSpace(name+" "+synopsis))
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprint(a.stdout, "\nflags:\n")
			fs.PrintDefaults()
		}
		fs.SetOutput(a.stderr)
	}
	return fs
}

// parse parses args, turning flag errors into usage errors.
func parse(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return flag.ErrHelp // Parse has printed the usage
	}
	if err != nil {
		return usageErrorf("%s: %v", fs.Name(), err)
	}
	if fs.NArg() > 0 {
		return usageErrorf("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}
