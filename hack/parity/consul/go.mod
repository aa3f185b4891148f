// Module consul builds Consul's transparent-proxy redirect (the iptables
// package of github.com/hashicorp/consul/sdk, MPL-2.0, which consul-cni and
// consul-k8s's init container call) at a pinned version, for the parity
// table of package redirect (TestParityConsul). It is separate from the main
// module so that its dependencies never leak into meshinit's go.mod.
// v0.18.2 is the newest release with the iptables package (v0.19 replaced
// it with nftables and needs a newer Go than meshinit's).
module github.com/meshinit/meshinit/hack/parity/consul

go 1.26.7

require github.com/hashicorp/consul/sdk v0.18.2
