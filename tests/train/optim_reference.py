#!/usr/bin/env python3
"""torch.optim references for the optimizer test (optimizer_test.sh): 100 steps on fixed
gradients for each optimizer setting and lr schedule, with the weights and optimizer state after
them and the lr of every step. The scheduler is stepped once after every optimizer.step(), as
precis's plan schedules are defined (compiler/driver/lr_schedule.h).

usage: /usr/bin/python3 optim_reference.py WORK   (reads WORK/init.npz, writes WORK/ref_NAME.npz and
WORK/configs.tsv: NAME<TAB>precis compile flags)"""
import sys

import numpy as np
import torch

STEPS = 100
# name: (torch settings, precis compile flags)
CONFIGS = {
    "sgd": (dict(opt="sgd", lr=0.1), "--optimizer sgd --lr 0.1"),
    "sgd_momentum_wd_step": (dict(opt="sgd", lr=0.05, momentum=0.9, weight_decay=0.01, sched="step", step_size=30, gamma=0.5),
                             "--optimizer sgd --lr 0.05 --momentum 0.9 --weight-decay 0.01 --lr-schedule step --lr-step-size 30 --lr-gamma 0.5"),
    "sgd_nesterov_cosine_warmup": (dict(opt="sgd", lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.001, sched="cosine", eta_min=0.001,
                                        warmup=10, start_factor=0.25),
                                   "--optimizer sgd --lr 0.05 --momentum 0.9 --nesterov --weight-decay 0.001 --lr-schedule cosine --lr-min 0.001 "
                                   "--warmup-steps 10 --warmup-start-factor 0.25 --lr-total-steps 100"),
    "sgd_cosine_horizon_from_train": (dict(opt="sgd", lr=0.1, sched="cosine"), "--optimizer sgd --lr 0.1 --lr-schedule cosine"),
    "adamw": (dict(opt="adamw", lr=0.01, weight_decay=0.01), "--optimizer adamw --lr 0.01 --weight-decay 0.01"),
    "adamw_cosine": (dict(opt="adamw", lr=0.01, weight_decay=0.1, sched="cosine", eta_min=1e-4),
                     "--optimizer adamw --lr 0.01 --weight-decay 0.1 --lr-schedule cosine --lr-min 1e-4 --lr-total-steps 100"),
    "adamw_step_warmup": (dict(opt="adamw", lr=0.02, betas=(0.8, 0.99), weight_decay=0.05, sched="step", step_size=25, gamma=0.3, warmup=5),
                          "--optimizer adamw --lr 0.02 --betas 0.8,0.99 --weight-decay 0.05 --lr-schedule step --lr-step-size 25 --lr-gamma 0.3 "
                          "--warmup-steps 5"),
    "adamw_warmup_constant": (dict(opt="adamw", lr=0.01, warmup=20), "--optimizer adamw --lr 0.01 --warmup-steps 20"),
}


def make_scheduler(cfg, opt):
    sched = cfg.get("sched", "constant")
    warmup = cfg.get("warmup", 0)
    horizon = STEPS - warmup
    if sched == "cosine":
        main = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=horizon, eta_min=cfg.get("eta_min", 0))
    elif sched == "step":
        main = torch.optim.lr_scheduler.StepLR(opt, step_size=cfg["step_size"], gamma=cfg["gamma"])
    else:
        main = torch.optim.lr_scheduler.ConstantLR(opt, factor=1.0, total_iters=0)
    if not warmup:
        return main
    ramp = torch.optim.lr_scheduler.LinearLR(opt, start_factor=cfg.get("start_factor", 1.0 / 3), end_factor=1.0, total_iters=warmup)
    return torch.optim.lr_scheduler.SequentialLR(opt, [ramp, main], milestones=[warmup])


def run(cfg, init):
    params = {n: torch.tensor(init[n], requires_grad=True) for n in ("W", "B")}
    grads = {n: torch.tensor(init["grad_" + n]) for n in ("W", "B")}
    plist = [params["W"], params["B"]]
    if cfg["opt"] == "sgd":
        opt = torch.optim.SGD(plist, lr=cfg["lr"], momentum=cfg.get("momentum", 0), nesterov=cfg.get("nesterov", False),
                              weight_decay=cfg.get("weight_decay", 0))
    else:
        opt = torch.optim.AdamW(plist, lr=cfg["lr"], betas=cfg.get("betas", (0.9, 0.999)), eps=1e-8, weight_decay=cfg.get("weight_decay", 0))
    sched = make_scheduler(cfg, opt)
    lrs = []
    for _ in range(STEPS):
        lrs.append(opt.param_groups[0]["lr"])
        for n in params:
            params[n].grad = grads[n].clone()
        opt.step()
        sched.step()
    out = {"lrs": np.array(lrs)}
    for n, p in params.items():
        out[n] = p.detach().numpy()
        for key, value in opt.state[p].items():
            if torch.is_tensor(value) and value.dim() > 0:
                out[n + "." + key] = value.numpy()
    return out


def main():
    work = sys.argv[1]
    init = dict(np.load(work + "/init.npz"))
    with open(work + "/configs.tsv", "w") as f:
        for name, (cfg, flags) in CONFIGS.items():
            np.savez(work + "/ref_" + name + ".npz", **run(cfg, init))
            f.write(name + "\t" + flags + "\n")


if __name__ == "__main__":
    main()
