package redirect

import (
	"errors"
	"fmt"
	"strconv"
)

// SettingError is a setting with a value that cannot be used. Key is the
// setting's flag name; codecs translate it to the name the user wrote
// (an annotation, or --flag) through Name.
type SettingError struct {
	Key   string
	Name  string
	Value string
	Err   error
}

func (e *SettingError) Error() string {
	name := e.Name
	if name == "" {
		name = "--" + e.Key
	}
	return fmt.Sprintf("invalid %s %s: %v", name, quoteShort(e.Value), e.Err)
}

// quoteLimit is how much of a value an error quotes.
const quoteLimit = 64

// quoteShort quotes s for an error message: all of it when it is at most
// quoteLimit bytes, else its first quoteLimit bytes followed by "...", so
// no value, however long, makes a long message.
func quoteShort(s string) string {
	if len(s) <= quoteLimit {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:quoteLimit]) + "..."
}

func (e *SettingError) Unwrap() error { return e.Err }

// renameSettings rewrites the Name of every SettingError in err with name(key).
func renameSettings(err error, name func(key string) string) error {
	if err == nil {
		return nil
	}
	var errs []error
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		errs = joined.Unwrap()
	} else {
		errs = []error{err}
	}
	for _, e := range errs {
		var se *SettingError
		if errors.As(e, &se) {
			se.Name = name(se.Key)
		}
	}
	return err
}
