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

package oci

import "encoding/binary"

// XattrCapability is the extended attribute that holds a file's
// capabilities, which the kernel grants a program when it starts.
const XattrCapability = "security.capability"

// FileCapabilities encodes file capabilities the way setcap(8) stores them
// in XattrCapability outside user namespaces (struct vfs_cap_data, revision
// 2): caps (capability numbers, e.g. unix.CAP_NET_ADMIN) in the permitted
// set, none inheritable, and the effective flag when effective is set (the
// program then starts with them effective; a program that passes them on
// without using them itself does not need it). setcap's
// "cap_net_admin,cap_net_raw+p" is FileCapabilities(false, 12, 13).
func FileCapabilities(effective bool, caps ...uint) string {
	const revision2, flagEffective = 0x02000000, 0x1
	var permitted [2]uint32
	for _, c := range caps {
		permitted[c/32] |= 1 << (c % 32)
	}
	var b [20]byte // magic_etc, then {permitted, inheritable} twice
	magic := uint32(revision2)
	if effective {
		magic |= flagEffective
	}
	binary.LittleEndian.PutUint32(b[0:], magic)
	binary.LittleEndian.PutUint32(b[4:], permitted[0])
	binary.LittleEndian.PutUint32(b[12:], permitted[1])
	return string(b[:])
}
