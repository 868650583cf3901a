// Package decodeguard keeps objects that the API server stores but that do
// not decode into their Go types out of the informer cache, so that one
// such object cannot stop the operator.
// It imports no package of the operator: the manager wires it into its
// cache.
//
// Client-go decodes a list response, and a watch stream event by event, into
// Go types: one object that fails to decode (a value an older CRD schema
// admitted, a hand-edited etcd) fails the list of every object of its kind,
// and a watch ends on its event. The informer of that kind then never
// syncs: every object of the kind stops reconciling and, after a restart,
// the manager exits on its cache-sync timeout.
//
// The guard sits in the cache's HTTP client, below client-go's decoding. For
// the list and watch requests of one API group it decodes every object on
// its own; objects that fail are dropped from lists, and their watch events
// become deletions carrying only their metadata, so the cache forgets a
// version it cannot hold and takes the object back once it is fixed. Each
// rejected object is handed to a report function. Every other request and
// response passes through untouched.
package decodeguard
