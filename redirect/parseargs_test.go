package redirect

import (
	"flag"
	"io"
)

// ParseArgs parses redirector flags over Defaults and validates the result,
// as the redirector does (ParseFlags on a FlagSet of its own), for tests.
func ParseArgs(args []string) (Config, error) {
	fs := flag.NewFlagSet("redirector", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return ParseFlags(fs, args)
}
