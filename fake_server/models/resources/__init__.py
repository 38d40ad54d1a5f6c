"""An account's resources beyond sandboxes: networks, disks, templates and desktops (the
synthetic one, ``desktop``, or the runtime's real one, ``desktop_live``), each a table of its
own over what they share (``base``), held together per account (``holdings``)."""
