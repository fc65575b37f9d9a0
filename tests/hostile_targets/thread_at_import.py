"""Importing this starts a thread, as some SDKs do: such a server cannot be forked from a zygote."""

import threading
import time

threading.Thread(target=time.sleep, args=(300,), daemon=True, name="started-at-import").start()
