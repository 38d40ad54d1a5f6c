# mypy: ignore-errors
"""What runs inside a desktop:1 sandbox to read its X server: the guest's own ``python3`` with
``python3-xlib`` (``desktop_image``), started as ``python3 -c <this file> OP ARGS`` by
``desktop.XDesktop`` (one exec per API call; the fake never connects to the X server itself).

Not imported by the fake (its Python has no ``Xlib``). Exit statuses the fake reads: 0 done,
3 an unknown key name (printed), 4 no X server, 5 no such window, 6 not installed (the
installed names printed), 7 the program ended or opened no window in time (why printed).
Window actions are EWMH client messages to the window manager, as a desktop's taskbar sends.
"""

import json
import os
import shutil
import subprocess
import sys
import time

from Xlib import XK, X, Xatom, display
from Xlib.error import BadWindow, DisplayError, XError
from Xlib.ext import randr
from Xlib.protocol import event

ALIASES = {"ctrl", "control", "alt", "shift", "super", "meta"}
KNOWN_APPS = ("firefox", "chromium", "xterm", "gedit", "nautilus", "code")
WAIT_WINDOW, WAIT_ACTION, POLL = 10.0, 2.0, 0.02
#: The virtual desktop minimized windows go to (evilwm's last of eight).
HIDDEN_DESKTOP = 7


def connect(wait=0.0):
    deadline = time.monotonic() + wait
    while True:
        try:
            return display.Display()
        except (DisplayError, OSError, ConnectionError):
            if time.monotonic() >= deadline:
                print("the desktop's X server is not running", file=sys.stderr)
                sys.exit(4)
            time.sleep(POLL)


def atom(d, name):
    return d.intern_atom(name)


def prop(d, window, name, kind=X.AnyPropertyType):
    try:
        got = window.get_full_property(atom(d, name), kind)
    except BadWindow:
        return None
    return None if got is None else got.value


def clients(d):
    root = d.screen().root
    listed = prop(d, root, "_NET_CLIENT_LIST", Xatom.WINDOW)
    return [int(w) for w in listed] if listed is not None else []


def text(value):
    if value is None:
        return ""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def describe(d, wid):
    try:
        return _describe(d, wid)
    except XError:  # gone meanwhile
        return None


def _describe(d, wid):
    window = d.create_resource_object("window", wid)
    root = d.screen().root
    geometry = window.get_geometry()
    origin = window.translate_coords(root, 0, 0)
    attributes = window.get_attributes()
    title = text(prop(d, window, "_NET_WM_NAME")) or text(prop(d, window, "WM_NAME"))
    wm_class = window.get_wm_class() or ("", "")
    states = set(prop(d, window, "_NET_WM_STATE", Xatom.ATOM) or ())
    wm_state = prop(d, window, "WM_STATE")
    if (
        atom(d, "_NET_WM_STATE_HIDDEN") in states
        or (wm_state is not None and len(wm_state) and wm_state[0] == 3)
        or attributes.map_state == X.IsUnmapped
    ):
        state = "minimized"
    elif {atom(d, "_NET_WM_STATE_MAXIMIZED_VERT"), atom(d, "_NET_WM_STATE_MAXIMIZED_HORZ")} <= (
        states
    ):
        state = "maximized"
    else:
        state = "normal"
    active = prop(d, root, "_NET_ACTIVE_WINDOW", Xatom.WINDOW)
    return {
        "id": f"0x{wid:08x}",
        "title": title,
        "application": (wm_class[0] or wm_class[1]).lower(),
        "x": -origin.x,
        "y": -origin.y,
        "width": geometry.width,
        "height": geometry.height,
        "state": state,
        "focused": bool(active) and int(active[0]) == wid,
    }


def windows(d):
    return [w for w in (describe(d, wid) for wid in clients(d)) if w is not None]


def find(d, name):
    try:
        wid = int(name, 16)
    except ValueError:
        wid = -1
    if wid not in clients(d):
        print("window not found", file=sys.stderr)
        sys.exit(5)
    return wid


def send(d, wid, name, data):
    root = d.screen().root
    message = event.ClientMessage(
        window=d.create_resource_object("window", wid),
        client_type=atom(d, name),
        data=(32, (list(data) + [0] * 5)[:5]),
    )
    root.send_event(message, event_mask=X.SubstructureRedirectMask | X.SubstructureNotifyMask)
    d.flush()


def op_ready(args):
    d = connect(float(args[0]))
    if len(args) > 1:  # and the window manager
        deadline = time.monotonic() + float(args[0])
        while prop(d, d.screen().root, "_NET_SUPPORTING_WM_CHECK") is None:
            if time.monotonic() >= deadline:
                print("the window manager did not start", file=sys.stderr)
                sys.exit(4)
            time.sleep(POLL)
    print("ready")


def op_size(args):
    """Set the screen's size with RandR, as ``xrandr --fb`` with a mode of that size would:
    the output's CRTC off, the screen resized, the CRTC on again in a mode of that size."""
    d = connect()
    width, height = int(args[0]), int(args[1])
    root = d.screen().root
    resources = randr.get_screen_resources(root)
    output, crtc = resources.outputs[0], resources.crtcs[0]
    mode = next((m.id for m in resources.modes if (m.width, m.height) == (width, height)), None)
    if mode is None:
        name = f"{width}x{height}"
        info = {
            "id": 0, "width": width, "height": height, "dot_clock": 0, "h_sync_start": 0,
            "h_sync_end": 0, "h_total": width, "h_skew": 0, "v_sync_start": 0, "v_sync_end": 0,
            "v_total": height, "name_length": len(name), "flags": 0,
        }  # fmt: skip
        mode = randr.create_mode(root, info, name).mode
        randr.add_output_mode(d, output, mode)
    stamp = resources.config_timestamp
    randr.set_crtc_config(d, crtc, stamp, 0, 0, 0, randr.Rotate_0, [], X.CurrentTime)
    millimetres = (round(width * 25.4 / 96), round(height * 25.4 / 96))  # 96 dpi
    randr.set_screen_size(root, width, height, *millimetres)
    randr.set_crtc_config(d, crtc, stamp, 0, 0, mode, randr.Rotate_0, [output], X.CurrentTime)
    d.sync()


def op_shot(args):
    d = connect()
    x, y, width, height = (int(a) for a in args[:4])
    image = d.screen().root.get_image(x, y, width, height, X.ZPixmap, 0xFFFFFFFF)
    out = sys.stdout.buffer
    out.write(f"{width} {height}\n".encode())
    out.write(image.data)
    out.flush()


def op_windows(_args):
    print(json.dumps(windows(connect())))


def op_cursor(_args):
    pointer = connect().screen().root.query_pointer()
    print(pointer.root_x, pointer.root_y)


def op_keys(args):
    unknown = [
        k
        for k in args
        if k.lower() not in ALIASES and len(k) != 1 and XK.string_to_keysym(k) == X.NoSymbol
    ]
    if unknown:
        print(unknown[0])
        sys.exit(3)


def op_launch(args):
    d = connect()
    program = shutil.which(args[0])
    if program is None:
        print(",".join(a for a in KNOWN_APPS if shutil.which(a)))
        sys.exit(6)
    before = set(clients(d))
    with open(os.devnull, "r+b") as null:
        child = subprocess.Popen(
            [program, *args[1:]], stdin=null, stdout=null, stderr=null, start_new_session=True
        )
    deadline = time.monotonic() + WAIT_WINDOW
    while True:
        new = [w for w in clients(d) if w not in before]
        if new:
            send(d, new[-1], "_NET_ACTIVE_WINDOW", (2, X.CurrentTime))
            described = describe(d, new[-1])
            if described is not None and described["title"]:
                print(json.dumps(described))
                return
        status = child.poll()
        if status is not None:
            print(f"the program exited with status {status} before opening a window")
            sys.exit(7)
        if time.monotonic() >= deadline:
            print(f"the program opened no window in {WAIT_WINDOW:.0f} s")
            sys.exit(7)
        time.sleep(POLL)


def op_act(args):
    d = connect()
    wid, action, rest = find(d, args[0]), args[1], [int(a) for a in args[2:]]
    window = d.create_resource_object("window", wid)
    before = describe(d, wid)
    horizontal, vertical = "_NET_WM_STATE_MAXIMIZED_HORZ", "_NET_WM_STATE_MAXIMIZED_VERT"
    done = {
        "focus": lambda w: w["focused"],
        "restore": lambda w: w["state"] == "normal",
        "move": lambda w: (w["x"], w["y"]) == tuple(rest),
        "resize": lambda w: (w["width"], w["height"]) == tuple(rest),
        "maximize": lambda w: w["state"] == "maximized",
        "minimize": lambda w: w["state"] == "minimized",
        "close": lambda w: False,
    }[action]
    if action in ("focus", "restore"):
        if action == "restore":
            send(d, wid, "_NET_WM_STATE", (0, atom(d, horizontal), atom(d, vertical), 1))
        current = prop(d, d.screen().root, "_NET_CURRENT_DESKTOP", Xatom.CARDINAL)
        send(d, wid, "_NET_WM_DESKTOP", (int(current[0]) if current else 0, 2))
        send(d, wid, "_NET_ACTIVE_WINDOW", (2, X.CurrentTime))
        window.configure(stack_mode=X.Above)
    elif action == "move":
        window.configure(x=rest[0], y=rest[1])
    elif action == "resize":
        window.configure(width=rest[0], height=rest[1])
    elif action == "maximize":
        send(d, wid, "_NET_WM_STATE", (1, atom(d, horizontal), atom(d, vertical), 1))
    elif action == "minimize":
        # evilwm has no icons: a window on a virtual desktop never shown is hidden
        send(d, wid, "_NET_WM_DESKTOP", (HIDDEN_DESKTOP, 2))
    elif action == "close":
        send(d, wid, "_NET_CLOSE_WINDOW", (X.CurrentTime, 2))
    d.sync()
    # the window manager acts on its own time: the answer waits for it (bounded)
    deadline = time.monotonic() + WAIT_ACTION
    now = describe(d, wid) if wid in clients(d) else None
    while now is not None and not done(now) and time.monotonic() < deadline:
        time.sleep(POLL)
        now = describe(d, wid) if wid in clients(d) else None
    print(json.dumps(now or before))


if __name__ == "__main__":
    globals()["op_" + sys.argv[1]](sys.argv[2:])
