//go:build !linux

package log

import "syscall"

// sendRange is Linux-only: elsewhere WriteTo copies through a buffer.
func sendRange(*Log, syscall.Conn, syscall.Conn, *fileRange) (int64, error, bool) {
	return 0, nil, false
}
