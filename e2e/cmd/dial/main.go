// Command dial connects to each TCP address given, prints the first line
// it is answered with (with -connect, only that it connected), and exits
// non-zero if any address does not answer within -timeout (it retries
// until then). End-to-end tests run it in a pod to prove what a connection
// from there reaches.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

func main() {
	timeout := flag.Duration("timeout", 30*time.Second, "give up on an address after this long")
	connect := flag.Bool("connect", false, "only connect, expect no line (e.g. a TLS server)")
	flag.Parse()
	failed := false
	for _, addr := range flag.Args() {
		line, err := dial(addr, *timeout, *connect)
		if err != nil {
			fmt.Fprintf(os.Stderr, "dial %s: %v\n", addr, err)
			failed = true
			continue
		}
		fmt.Printf("%s: %s\n", addr, line)
	}
	if failed || flag.NArg() == 0 {
		os.Exit(1)
	}
}

func dial(addr string, timeout time.Duration, connect bool) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		line, err := once(addr, time.Until(deadline), connect)
		if err == nil || time.Now().After(deadline) {
			return line, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func once(addr string, timeout time.Duration, connect bool) (string, error) {
	c, err := net.DialTimeout("tcp", addr, min(timeout, 5*time.Second))
	if err != nil {
		return "", err
	}
	defer c.Close()
	if connect {
		return "connected", nil
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("read: %w", err)
	}
	return strings.TrimSpace(line), nil
}
