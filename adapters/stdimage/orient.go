package stdimage

import (
	"encoding/binary"
	"image"
)

// orientation is the EXIF orientation (1-8) of a JPEG, 1 when it has none or it cannot be
// read: APP1 "Exif" segments before the scan are searched for tag 0x0112 of IFD0. Every
// offset is checked against the data, which is the upload's.
func orientation(data []byte) int {
	if len(data) < 4 || data[0] != 0xff || data[1] != 0xd8 {
		return 1
	}
	for i := 2; i+4 <= len(data) && data[i] == 0xff; {
		marker, size := data[i+1], int(binary.BigEndian.Uint16(data[i+2:]))
		if marker == 0xda || size < 2 || i+2+size > len(data) {
			return 1
		}
		if seg := data[i+4 : i+2+size]; marker == 0xe1 && len(seg) > 6 && string(seg[:6]) == "Exif\x00\x00" {
			return tiffOrientation(seg[6:])
		}
		i += 2 + size
	}
	return 1
}

// tiffOrientation reads the orientation tag of a TIFF header's first IFD.
func tiffOrientation(t []byte) int {
	if len(t) < 8 {
		return 1
	}
	var order binary.ByteOrder
	switch string(t[:2]) {
	case "II":
		order = binary.LittleEndian
	case "MM":
		order = binary.BigEndian
	default:
		return 1
	}
	ifd := int64(order.Uint32(t[4:]))
	if ifd+2 > int64(len(t)) {
		return 1
	}
	n := int64(order.Uint16(t[ifd:]))
	for e := ifd + 2; e+12 <= int64(len(t)) && e < ifd+2+12*n; e += 12 {
		if order.Uint16(t[e:]) != 0x0112 || order.Uint16(t[e+2:]) != 3 {
			continue
		}
		if v := int(order.Uint16(t[e+8:])); v >= 1 && v <= 8 {
			return v
		}
		return 1
	}
	return 1
}

// upright applies an EXIF orientation to an image: 2-4 mirror or turn it half-way, 5-8 swap
// its sides, as the EXIF 2.3 table of tag 0x0112 reads.
func upright(src *image.NRGBA, orient int) *image.NRGBA {
	if orient <= 1 || orient > 8 {
		return src
	}
	w, h := src.Rect.Dx(), src.Rect.Dy()
	dw, dh := w, h
	if orient >= 5 {
		dw, dh = h, w
	}
	dst := image.NewNRGBA(image.Rect(0, 0, dw, dh))
	for y := range dh {
		for x := range dw {
			var sx, sy int
			switch orient {
			case 2:
				sx, sy = w-1-x, y
			case 3:
				sx, sy = w-1-x, h-1-y
			case 4:
				sx, sy = x, h-1-y
			case 5:
				sx, sy = y, x
			case 6:
				sx, sy = y, h-1-x
			case 7:
				sx, sy = w-1-y, h-1-x
			case 8:
				sx, sy = w-1-y, x
			}
			copy(dst.Pix[dst.PixOffset(x, y):][:4], src.Pix[src.PixOffset(sx, sy):][:4])
		}
	}
	return dst
}
