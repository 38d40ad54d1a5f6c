"""desktop:1's real desktop on the process runtime: the host's side and the guest's.

``xdesktop`` drives Xvfb, evilwm and xdotool in the sandbox, one exec per computer-use call;
``xguest`` is the program those execs run with the guest's own ``python3`` (read as text,
never imported by the fake). The X desktop's programs are built with the image
(``images.desktop_image``).
"""
