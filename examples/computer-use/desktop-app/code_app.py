"""A one-window Tk app for the desktop tasks (docs/computer-use.md "A desktop over MCP").

It shows a code and an entry box; Return (or the Submit button) writes what the entry holds to
`.desktop/typed.txt` in the working dir, which the judge compares with the code the task expects
(only in a session whose harness has no shell: one with a shell could write the file itself).
The code comes from `.desktop/seed.json` ({"code": "..."}, written by the task's prepare steps),
which the app deletes once read: from then on the code is on the screen only.

    /usr/bin/python3 code_app.py        (Debian's python3-tk; DISPLAY set by desktop-mcp.mjs)
"""

import json
import os
import tkinter as tk

SEED = ".desktop/seed.json"
TYPED = ".desktop/typed.txt"


def main() -> None:
    with open(SEED, encoding="utf-8") as f:
        code = str(json.load(f)["code"])
    os.remove(SEED)

    root = tk.Tk()
    root.title("Code check")
    # No window manager places it: the top-left corner of the screen, a fixed size.
    root.geometry("480x220+0+0")
    root.configure(background="white")
    tk.Label(root, text="Type this code in the box:", font=("DejaVu Sans", 16), bg="white").place(x=20, y=20)
    tk.Label(root, text=code, font=("DejaVu Sans Mono", 28, "bold"), fg="#003399", bg="white").place(x=20, y=60)
    entry = tk.Entry(root, font=("DejaVu Sans Mono", 20), width=16)
    entry.place(x=20, y=130)
    status = tk.Label(root, text="", font=("DejaVu Sans", 12), bg="white")
    status.place(x=20, y=180)

    def submit(_event=None) -> None:
        with open(TYPED, "w", encoding="utf-8") as f:
            f.write(entry.get())
        status.configure(text="Saved.")

    entry.bind("<Return>", submit)
    tk.Button(root, text="Submit", command=submit).place(x=360, y=132)
    root.mainloop()


if __name__ == "__main__":
    main()
