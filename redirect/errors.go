/*
Copyright The meshinit Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

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
	return fmt.Sprintf("invalid %s %s: %v", name, QuoteShort(e.Value), e.Err)
}

// QuoteLimit is how much of a value messages and logs show: values come from
// pods, flags and reviews before anything validated them, and may be
// megabytes long.
const QuoteLimit = 64

// QuoteShort quotes s for a message: all of it when it is at most
// QuoteLimit bytes, else its first QuoteLimit bytes followed by "...", so
// no value, however long, makes a long message.
func QuoteShort(s string) string {
	if len(s) <= QuoteLimit {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:QuoteLimit]) + "..."
}

// Short is s cut after QuoteLimit bytes, marked with "...", for logs.
func Short(s string) string {
	if len(s) <= QuoteLimit {
		return s
	}
	return s[:QuoteLimit] + "..."
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
