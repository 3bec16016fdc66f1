package serialfallback

import (
	"fmt"

	"go.bug.st/serial"
)

// serialPort is a real serial device driven by go.bug.st/serial, whose
// Close wakes a blocked Read through its own signalling pipe.
type serialPort struct {
	serial.Port
}

func (p serialPort) flushInput() error { return p.ResetInputBuffer() }

// defaultSerialSpeed is used when LinkConfig.Speed is 0.
const defaultSerialSpeed = 9600

func openSerial(path string, speed int, fl flow) (port, error) {
	side, err := openFlowSide(path, fl)
	if err != nil {
		return nil, fmt.Errorf("serialfallback: open %s: %w", path, err)
	}
	defer side.close()
	if speed == 0 {
		speed = defaultSerialSpeed
	}
	// Parity is done in software (see package doc), so the port is 8N1.
	p, err := serial.Open(path, &serial.Mode{
		BaudRate: speed,
		DataBits: 8,
		Parity:   serial.NoParity,
		StopBits: serial.OneStopBit,
	})
	if err != nil {
		return nil, fmt.Errorf("serialfallback: open serial port %s at %d bps: %w", path, speed, err)
	}
	if err := side.apply(); err != nil {
		p.Close()
		return nil, fmt.Errorf("serialfallback: %s: set flow control: %w", path, err)
	}
	return serialPort{p}, nil
}
