"""A two-rank DDP training loop on CPU (gloo) where only rank 1 gets a bad batch at step 1.

Run by tests/guard/test_workers_dist.py under ``torch.distributed.run``: ``dist_train.py CKPT EVIDENCE_DIR``.
Without the guard, a GPU rank dies in a device-side assert while the other waits in all-reduce; with it,
rank 1 raises BatchIndexError in the collator, before any collective, and the launcher ends the job.
"""

from __future__ import annotations

import sys
import time

import torch
import torch.distributed as dist
import transformers

import hf_vocab_audit as hva


def main(ckpt: str, evidence: str) -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_pretrained(ckpt)
    tok = transformers.AutoTokenizer.from_pretrained(ckpt)
    collate = hva.guard(model, tok, evidence_dir=evidence).wrap(
        transformers.DataCollatorForLanguageModeling(tok, mlm=False))
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    for step in range(4):
        features = [tok("w1 w2 w3"), tok("w4 w5")]
        if rank == 1 and step == 1:
            features[0]["input_ids"][1] = 100_000  # no such row
        try:
            batch = collate(features)
        except hva.BatchIndexError:
            print(f"rank {rank} raised at {time.time():.3f}", flush=True)
            raise
        ddp(**batch).loss.backward()  # all-reduce of the gradients: the other rank waits here
        opt.step()
        opt.zero_grad()
        print(f"rank {rank} step {step} done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
