// Package egress decides which addresses the operator's own process
// connects to on behalf of tenants, and enforces it.
// It imports no package of the operator: the manager and the live API use
// it.
//
// Tenants choose the S3 endpoints of their EchoBackupLocations, and the
// manager lists those buckets for the live API: without a policy, any
// tenant could make the operator's pod connect to whatever it can reach
// (its own metrics and probes on loopback, the cluster's Services and
// pods, a cloud's instance metadata) and read the answers back.
//
// The policy denies by default every range that is not the public
// internet (Rules: loopback, private networks, CGNAT, link-local, unique
// local, NAT64 and the IPv6 transition ranges, ...) and the cluster's own
// Service and pod networks, which an administrator names
// (ClusterNetworksFlag). An administrator opens ranges with an allow-list
// (AllowFlag), for example an in-cluster S3 service. The same settings may
// come from the environment (AllowEnv, ClusterNetworksEnv, ProxyEnv),
// where OLM's Subscription puts them. The most specific
// range holding an address decides, the allow-list winning a tie: allowing
// 10.0.0.0/8 leaves the cluster networks inside it denied, and allowing
// 0.0.0.0/0 opens no denied range. Unspecified, multicast, broadcast and
// reserved addresses are never reached, allowed or not. IPv4-mapped IPv6
// addresses (::ffff:10.0.0.1) are judged as the IPv4 address they carry.
//
// Every connection is checked when it is made, on the address it is made
// to (Policy.Dialer): a host name, however it resolves, a DNS answer that
// changes between two requests, or a redirect to another host are all
// checked on the address actually dialled. Through an HTTP proxy
// (ProxyFlag), the same holds: for each connection the operator resolves
// the host once, refuses it unless every address is allowed, and asks the
// proxy to CONNECT to a checked address, never to the name
// (Policy.ConfigureTransport). The proxy resolves nothing, so a name that
// answers an allowed address to the check and a denied one next (DNS
// rebinding) never reaches the denied one. TLS still verifies the
// storage's certificate for the host name, and plain HTTP goes through
// the tunnel too, so that the Host header S3 signs stays the host name.
// The environment's proxy settings (HTTP_PROXY, HTTPS_PROXY) are never
// used.
//
// The policy applies to the manager's process only. The data mover Jobs
// run in the tenant's namespace, on the tenant's network, and reach
// nothing the tenant's own pods could not: they use the cluster's proxy
// settings, which any of the tenant's pods may use too.
package egress
