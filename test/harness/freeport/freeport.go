package freeport

import "net"

// On returns a TCP port of host that nothing listened on a moment ago.
// Another process may take it before its use; the window is short.
func On(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, err
	}
	return port, nil
}

// Port returns a free TCP port of 127.0.0.1 (On).
func Port() (int, error) { return On("127.0.0.1") }
