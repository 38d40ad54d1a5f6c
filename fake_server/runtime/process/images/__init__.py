"""What a process-runtime sandbox boots: the devbox:1 image, or the host-directory layout.

The host's programs with everything personal masked (``image``), the Debian 13 tree built
once per machine (``debian``) and desktop:1's X desktop over it (``desktop_image``), and the
choice, once per fake, of what sandboxes boot (``system``).
"""
