//go:build linux && !amd64

package main

import "syscall"

// sysSetns is setns(2)'s number.
const sysSetns = syscall.SYS_SETNS
