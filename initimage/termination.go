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

package initimage

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"

	"github.com/meshinit/meshinit/redirect"
)

// maxTerminationMessage is what the kubelet keeps of a termination message.
const maxTerminationMessage = 4096

// terminationMessage is where apply writes what it did for each IP family,
// or why it failed: --termination-message-path when given, else the
// kubelet's default file when it exists. Outside a container (make
// demo-netns, the tests) the default does not exist and nothing is written.
type terminationMessage struct {
	path     string
	explicit bool
}

func (m *terminationMessage) set(path string) error {
	m.path, m.explicit = path, true
	return nil
}

// write writes the outcomes, or err, to the message's file. A failure to
// write is logged, not returned: the rules are in place (or not) whatever
// the message says.
func (m terminationMessage) write(log *slog.Logger, outcomes []redirect.Outcome, err error) {
	path := m.path
	if !m.explicit {
		path = DefaultTerminationMessagePath
		if _, statErr := os.Stat(path); errors.Is(statErr, fs.ErrNotExist) {
			return
		}
	}
	text := redirect.Summary(outcomes)
	if err != nil {
		text = "apply failed: " + err.Error() + "\n"
	}
	if len(text) > maxTerminationMessage {
		text = text[:maxTerminationMessage-len("...\n")] + "...\n"
	}
	if werr := os.WriteFile(path, []byte(text), 0o644); werr != nil {
		log.Warn("could not write the termination message", "path", path, "error", werr)
	}
}
