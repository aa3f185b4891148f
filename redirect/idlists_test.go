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
	"strings"
	"testing"
)

func TestParseIDList(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"", "", ""},
		{" 2000, 1000,2000 ,", "2000,1000", ""},
		{"0,0001", "0,1", ""},
		{"4294967294", "4294967294", ""},
		{"4294967295", "", "not a numeric ID"},
		{"*", "", `"*" is not allowed`},
		{"1000,*", "", "must stand alone"},
		{"root", "", `"root" is not a numeric ID 0-4294967294 (names are not looked up)`},
		{"-1", "", "not a numeric ID"},
		{"1000-2000", "", "not a numeric ID"},
	} {
		l, err := ParseIDList(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseIDList(%q) = %q, %v; want an error containing %q", tc.in, l, err, tc.err)
		case tc.err == "" && (err != nil || l.String() != tc.want):
			t.Errorf("ParseIDList(%q) = %q, %v; want %q", tc.in, l, err, tc.want)
		}
	}
}

func TestParseInterfaceList(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"", "", ""},
		{" net1 ,eth1,net1", "net1,eth1", ""},
		{"eth0.100,vxlan-x,_a,1x", "eth0.100,vxlan-x,_a,1x", ""},
		{"a23456789012345", "a23456789012345", ""},
		{"a234567890123456", "", "not an interface name"},
		{"net+", "", "not an interface name"},
		{"-i", "", "not an interface name"},
		{".x", "", "not an interface name"},
		{"eth1:0", "", "not an interface name"},
		{"*", "", `"*" is not allowed`},
	} {
		l, err := ParseInterfaceList(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseInterfaceList(%q) = %q, %v; want an error containing %q", tc.in, l, err, tc.err)
		case tc.err == "" && (err != nil || l.String() != tc.want):
			t.Errorf("ParseInterfaceList(%q) = %q, %v; want %q", tc.in, l, err, tc.want)
		}
	}
}
