//go:build linux

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

package main

import (
	"slices"
	"testing"
)

func TestParseExecs(t *testing.T) {
	log := `100 execve("/opt/istio/pilot-agent", ["/opt/istio/pilot-agent", "istio-iptables", "-i", "*"], 0x7ffd /* 39 vars */) = 0
101 execve("/usr/sbin/iptables-nft-save", ["iptables-nft-save"], 0xc000 /* 39 vars */ <unfinished ...>
102 execve("/usr/local/sbin/iptables", ["iptables", "-t", "nat"], 0xc000 /* 39 vars */) = -1 ENOENT (No such file or directory)
102 execve("/usr/sbin/iptables", ["iptables", "-t", "nat"], 0xc000 /* 39 vars */) = 0
101 <... execve resumed>) = 0
103 execve("/usr/sbin/iptables-nft-restore", ["iptables-nft-restore", "--noflush"], 0xc000 /* 39 vars */ <unfinished ...>
103 <... execve resumed>) = -1 EACCES (Permission denied)
104 execve("/usr/sbin/x", ["x", "a \"b\""], 0xc000 /* 39 vars */) = 0
`
	got := parseExecs(log)
	want := []string{"pilot-agent istio-iptables -i '*'", "iptables-nft-save", "iptables -t nat", `x 'a "b"'`}
	if !slices.Equal(got, want) {
		t.Errorf("parseExecs =\n%q\nwant\n%q", got, want)
	}
}
