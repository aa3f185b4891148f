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

// Package testdns is the tiny DNS server meshinit's tests use as a
// nameserver and as a DNS proxy, over UDP and TCP: whatever it is asked, it
// answers with one TXT record naming itself (and, over TCP, the original
// destination of a redirected connection, as testproxy does). It proves
// where a query really arrived. Ask is its client.
//
// Only what that needs of DNS (RFC 1035) is here: one question per message,
// names without compression in questions, a TXT answer pointing at the
// question's name.
package testdns

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/meshinit/meshinit/internal/testproxy"
)

const (
	typeTXT  = 16
	classIN  = 1
	flagsQR  = 1 << 15 // a response
	flagsRD  = 1 << 8  // recursion desired
	maxUDP   = 512
	headerSz = 12
)

// ServeUDP answers every query arriving on c with a TXT record holding
// name. It returns when c is closed.
func ServeUDP(c net.PacketConn, name string) {
	buf := make([]byte, maxUDP)
	for {
		n, from, err := c.ReadFrom(buf)
		if err != nil {
			return
		}
		if answer, err := Answer(buf[:n], name); err == nil {
			_, _ = c.WriteTo(answer, from)
		}
	}
}

// ServeTCP answers every query on every connection to l with a TXT record
// holding name, followed by " orig=<original destination>" when the
// connection was redirected. It returns when l is closed.
func ServeTCP(l net.Listener, name string) {
	testproxy.Each(l, func(c net.Conn) {
		text := name + testproxy.Orig(c)
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		for {
			query, err := readTCP(c)
			if err != nil {
				return
			}
			answer, err := Answer(query, text)
			if err != nil || writeTCP(c, answer) != nil {
				return
			}
		}
	})
}

// Ask sends a TXT query for qname over c (a connected UDP socket, or a TCP
// connection) and returns the text of the answer.
func Ask(c net.Conn, qname string) (string, error) {
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	id := uint16(time.Now().UnixNano())
	query := Query(id, qname)
	_, tcp := c.(*net.TCPConn)
	var answer []byte
	var err error
	if tcp {
		if err = writeTCP(c, query); err == nil {
			answer, err = readTCP(c)
		}
	} else {
		buf := make([]byte, maxUDP)
		if _, err = c.Write(query); err == nil {
			var n int
			n, err = c.Read(buf)
			answer = buf[:n]
		}
	}
	if err != nil {
		return "", err
	}
	return parseAnswer(answer, id, qname)
}

// Query is a TXT query for qname with id.
func Query(id uint16, qname string) []byte {
	msg := binary.BigEndian.AppendUint16(nil, id)
	msg = binary.BigEndian.AppendUint16(msg, flagsRD)
	msg = append(msg, 0, 1, 0, 0, 0, 0, 0, 0) // one question
	msg = appendName(msg, qname)
	msg = binary.BigEndian.AppendUint16(msg, typeTXT)
	return binary.BigEndian.AppendUint16(msg, classIN)
}

// Answer is the response to query: its question, answered by one TXT
// record holding text (at most 255 bytes).
func Answer(query []byte, text string) ([]byte, error) {
	if len(text) > 255 {
		return nil, errors.New("text longer than 255 bytes")
	}
	_, end, err := question(query)
	if err != nil {
		return nil, err
	}
	msg := append([]byte{}, query[:2]...) // id
	msg = binary.BigEndian.AppendUint16(msg, flagsQR|binary.BigEndian.Uint16(query[2:])&flagsRD)
	msg = append(msg, 0, 1, 0, 1, 0, 0, 0, 0) // one question, one answer
	msg = append(msg, query[headerSz:end]...) // the question
	msg = append(msg, 0xc0, headerSz)         // its name, by pointer
	msg = binary.BigEndian.AppendUint16(msg, typeTXT)
	msg = binary.BigEndian.AppendUint16(msg, classIN)
	msg = append(msg, 0, 0, 0, 0) // TTL
	msg = binary.BigEndian.AppendUint16(msg, uint16(1+len(text)))
	return append(append(msg, byte(len(text))), text...), nil
}

// parseAnswer checks that msg answers query id for qname and returns the
// text of its TXT answer.
func parseAnswer(msg []byte, id uint16, qname string) (string, error) {
	name, end, err := question(msg)
	if err != nil {
		return "", err
	}
	if binary.BigEndian.Uint16(msg) != id || binary.BigEndian.Uint16(msg[2:])&flagsQR == 0 || name != qname {
		return "", fmt.Errorf("not the answer to query %d for %s", id, qname)
	}
	if binary.BigEndian.Uint16(msg[6:]) != 1 {
		return "", errors.New("no answer record")
	}
	rr := msg[end:]
	// name (a 2-byte pointer), type, class, TTL, length, then the strings.
	if len(rr) < 12 || rr[0] != 0xc0 || binary.BigEndian.Uint16(rr[2:]) != typeTXT {
		return "", errors.New("the answer is not a TXT record")
	}
	data := rr[12:]
	if n := int(binary.BigEndian.Uint16(rr[10:])); n != len(data) || n == 0 || int(data[0]) != n-1 {
		return "", errors.New("malformed TXT record")
	}
	return string(data[1:]), nil
}

// question reads the one question of msg: its name, and where it ends.
func question(msg []byte) (string, int, error) {
	if len(msg) < headerSz || binary.BigEndian.Uint16(msg[4:]) != 1 {
		return "", 0, errors.New("not a message with one question")
	}
	var labels []string
	i := headerSz
	for {
		if i >= len(msg) {
			return "", 0, io.ErrUnexpectedEOF
		}
		n := int(msg[i])
		i++
		if n == 0 {
			break
		}
		if n > 63 || i+n > len(msg) {
			return "", 0, errors.New("malformed name")
		}
		labels = append(labels, string(msg[i:i+n]))
		i += n
	}
	if i+4 > len(msg) {
		return "", 0, io.ErrUnexpectedEOF
	}
	return strings.Join(labels, "."), i + 4, nil
}

func appendName(msg []byte, name string) []byte {
	for label := range strings.SplitSeq(strings.TrimSuffix(name, "."), ".") {
		msg = append(append(msg, byte(len(label))), label...)
	}
	return append(msg, 0)
}

// DNS over TCP prefixes each message with its length (RFC 1035 4.2.2).
func readTCP(r io.Reader) ([]byte, error) {
	var n [2]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	msg := make([]byte, binary.BigEndian.Uint16(n[:]))
	_, err := io.ReadFull(r, msg)
	return msg, err
}

func writeTCP(w io.Writer, msg []byte) error {
	_, err := w.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(msg))), msg...))
	return err
}
