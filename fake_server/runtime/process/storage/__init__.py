"""Where a process-runtime sandbox's files live: its root file system, its disk, its directory.

The copy-on-write root over the image (``rootfs``) on an ext4 disk image of its own
(``diskimage``), the files API resolving guest paths inside it (``dirdisk``), the host
directories the runtime keeps sandboxes in (``rootdir``), and account disks' directories
bound into sandboxes (``buckets``).
"""
