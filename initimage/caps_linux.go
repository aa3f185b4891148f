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
	"log/slog"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/meshinit/meshinit/redirect"
)

// netCaps are the capabilities iptables needs: NET_ADMIN to change the
// tables, NET_RAW for the raw sockets it opens.
var netCaps = []struct {
	c    uintptr
	name string
}{{unix.CAP_NET_ADMIN, "NET_ADMIN"}, {unix.CAP_NET_RAW, "NET_RAW"}}

// runner returns the Runner for iptables. Run as a non-root user (the init
// container's default), the redirector holds NET_ADMIN and NET_RAW in its
// permitted set only, from the file capabilities the image gives it; a
// program it starts without file capabilities of its own, like iptables,
// would start with none. So the runner hands on those of netCaps the
// redirector holds as ambient capabilities, which iptables then has. As
// root this changes nothing: iptables gets every capability anyway.
func runner(log *slog.Logger) redirect.Runner {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		log.Warn("cannot read the redirector's capabilities; iptables inherits none", "error", err)
		return redirect.ExecRunner{}
	}
	var held []uintptr
	names := []string{} // logged as [] (JSON), not null, when none is held
	for _, n := range netCaps {
		if data[n.c/32].Permitted&(1<<(n.c%32)) != 0 {
			held = append(held, n.c)
			names = append(names, n.name)
		}
	}
	log.Info("running as", "uid", os.Getuid(), "gid", os.Getgid(), "capabilities for iptables", names)
	if len(held) == 0 {
		return redirect.ExecRunner{}
	}
	return redirect.ExecRunner{SysProcAttr: &syscall.SysProcAttr{AmbientCaps: held}}
}
