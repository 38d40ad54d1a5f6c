"""An account's resources beyond sandboxes: networks, disks, templates and desktops, each a
table of its own over what they share (``base``), held together per account (``holdings``)."""
