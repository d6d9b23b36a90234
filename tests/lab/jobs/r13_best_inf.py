"""A healthy trainer that prints its best validation loss so far (tests/test_redteam_r13_best_inf_lab.py).

``python3 r13_best_inf.py``: ``step N | loss X | best_val_loss B`` every 50 ms for 40 steps, then
``training finished``, exit 0.  ``B`` is the running minimum of the validation loss, which starts, as
everywhere (``best_val_loss = float("inf")``), at ``inf`` until the first evaluation at step 10.
"""

import time

best_val_loss = float("inf")
for step in range(1, 41):
    loss = 2.0 / step
    if step % 10 == 0:  # an evaluation
        best_val_loss = min(best_val_loss, loss * 1.1)
    print(f"step {step} | loss {loss:.4f} | best_val_loss {best_val_loss:.4f}", flush=True)
    time.sleep(0.05)
print("training finished", flush=True)
