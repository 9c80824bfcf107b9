Bej
locationweights.binj
offset0j
length24p