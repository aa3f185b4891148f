//go:build linux

package main

// sysSetns is setns(2)'s number; package syscall lacks it on amd64.
const sysSetns = 308
