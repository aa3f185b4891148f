//go:build linux

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
