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

// Package testproxy is the stand-in proxy and app used by meshinit's tests:
// a TCP server that answers each connection with one line naming itself and,
// for redirected connections, the original destination the kernel recorded
// (SO_ORIGINAL_DST). It proves where a connection really arrived.
package testproxy

import (
	"bufio"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// OriginalDst returns the destination a connection had before the nat table
// redirected it, read with SO_ORIGINAL_DST (IPv4) or IP6T_SO_ORIGINAL_DST.
func OriginalDst(c *net.TCPConn) (netip.AddrPort, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return netip.AddrPort{}, err
	}
	var dst netip.AddrPort
	var serr error
	local := c.LocalAddr().(*net.TCPAddr)
	err = raw.Control(func(fd uintptr) {
		if local.IP.To4() != nil {
			var sa unix.RawSockaddrInet4
			size := uint32(unsafe.Sizeof(sa))
			serr = getsockopt(int(fd), unix.SOL_IP, unix.SO_ORIGINAL_DST, unsafe.Pointer(&sa), &size)
			dst = netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), ntohs(sa.Port))
			return
		}
		var sa unix.RawSockaddrInet6
		size := uint32(unsafe.Sizeof(sa))
		serr = getsockopt(int(fd), unix.SOL_IPV6, ip6tSOOriginalDst, unsafe.Pointer(&sa), &size)
		dst = netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), ntohs(sa.Port))
	})
	if err != nil {
		return netip.AddrPort{}, err
	}
	if serr != nil {
		return netip.AddrPort{}, fmt.Errorf("reading SO_ORIGINAL_DST: %w", serr)
	}
	return dst, nil
}

func getsockopt(fd, level, name int, val unsafe.Pointer, size *uint32) error {
	_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), uintptr(level), uintptr(name), uintptr(val), uintptr(unsafe.Pointer(size)), 0)
	if errno != 0 {
		return errno
	}
	return nil
}

func ntohs(p uint16) uint16 { return p>>8 | p<<8 }

// Orig is " orig=<original destination>" when c was redirected to this
// address, "" when it was not (or is not TCP).
func Orig(c net.Conn) string {
	if tc, ok := c.(*net.TCPConn); ok {
		if dst, err := OriginalDst(tc); err == nil && dst.Compare(netip.MustParseAddrPort(tc.LocalAddr().String())) != 0 {
			return " orig=" + dst.String()
		}
	}
	return ""
}

// Serve answers every connection on l with "<name> orig=<original dst>\n"
// when the connection was redirected, or "<name>\n" when it was not. It
// returns when l is closed.
func Serve(l net.Listener, name string) {
	Each(l, func(c net.Conn) { fmt.Fprintln(c, name+Orig(c)) })
}

// Each serves every connection on l with serve, each in its own goroutine,
// and closes it after; it returns when l is closed.
func Each(l net.Listener, serve func(net.Conn)) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			serve(c)
		}()
	}
}

// Ask connects to addr with dial and returns the line the server answered.
func Ask(dial func() (net.Conn, error)) (string, error) {
	c, err := dial()
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line), err
}

// ip6tSOOriginalDst is IP6T_SO_ORIGINAL_DST from linux/netfilter_ipv6/ip6_tables.h.
const ip6tSOOriginalDst = 80
