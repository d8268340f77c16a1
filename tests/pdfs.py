"""PDFs for tests, written by hand (a few objects and a cross-reference table), so that a
test says exactly what its PDF holds; pypdf only for encryption."""

from __future__ import annotations

import io


def _string(line: str) -> bytes:
    raw = line.encode("cp1252")
    return b"(" + raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


def make_pdf(*pages: str | bytes, to_unicode: bytes | None = None) -> bytes:
    """A PDF of these pages: a text is drawn a line at a time in Helvetica, bytes are the
    page's content stream as they are.  *to_unicode*: the font's ToUnicode CMap."""
    font = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding"
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"", b""]
    if to_unicode is not None:
        objects.append(b"<< /Length %d >>\nstream\n" % len(to_unicode) + to_unicode
                       + b"\nendstream")
        font += b" /ToUnicode %d 0 R" % len(objects)
    objects[2] = font + b" >>"
    kids = []
    for page in pages:
        ops = page if isinstance(page, bytes) else (
            b"BT /F1 12 Tf 14 TL 72 720 Td "
            + b" ".join(_string(line) + b" Tj T*" for line in page.split("\n")) + b" ET")
        objects.append(b"<< /Length %d >>\nstream\n" % len(ops) + ops + b"\nendstream")
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources"
                       b" << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % len(objects))
        kids.append(len(objects))
    objects[1] = (b"<< /Type /Pages /Kids [" + b" ".join(b"%d 0 R" % k for k in kids)
                  + b"] /Count %d >>" % len(kids))
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, xref)
    return bytes(out)


def encrypted(data: bytes, *, user_password: str) -> bytes:
    from pypdf import PdfWriter

    writer = PdfWriter(clone_from=io.BytesIO(data))
    writer.encrypt(user_password=user_password, owner_password="owner", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()
