package freeport

import (
	"net"
	"strconv"
	"testing"
)

// TestPortCanBeListenedOn: the port returned is free to listen on.
func TestPortCanBeListenedOn(t *testing.T) {
	port, err := Port()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("port %d is not free: %v", port, err)
	}
	_ = l.Close()
}
