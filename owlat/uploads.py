"""The upload cap: Django streams uploaded files to disk without any size limit (`DATA_UPLOAD_MAX_MEMORY_SIZE`
counts form fields only), and the CSRF check parses the upload before any view runs. This handler, first in
`FILE_UPLOAD_HANDLERS`, stops reading a request's files once they pass the largest upload a form of ours takes
(`IMPORT_MAX_BYTES`, the CSV import, or `IMAGE_UPLOAD_MAX_BYTES`, the template image library, whichever is larger):
the rest of the body is not read, nothing more is written, and the view sees the upload as missing (each view
refuses an upload over its own limit first, naming it)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler, StopUpload


def upload_max_bytes() -> int:
    return max(int(settings.IMPORT_MAX_BYTES), int(getattr(settings, "IMAGE_UPLOAD_MAX_BYTES", 0) or 0))


class UploadLimitHandler(FileUploadHandler):
    def __init__(self, request: Any = None) -> None:
        super().__init__(request)
        self.received = 0

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        self.received += len(raw_data)
        if self.received > upload_max_bytes():
            raise StopUpload(connection_reset=True)
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None  # the next handler (memory or temporary file) builds the file
